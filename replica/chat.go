package replica

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strconv"
	"sync"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/engine"
	"github.com/agenthost/bots/internal/feed"
)

// Publisher is where the chats of one holder publish, and how many ended
// turns each holds.
type Publisher struct {
	Bus *engine.Bus
	// Keep is how many ended turns a chat holds in memory, at least 1.
	Keep int
	// Paged says the turns a chat no longer holds can be fetched from its
	// log: its state then says how many there are in turnsNextCursor.
	Paged bool
	// Log hears of an action that did not publish; nil discards.
	Log *slog.Logger
}

// ErrGone is what Publish answers on a chat that has ended.
var ErrGone = errors.New("replica: the chat has ended")

// Chat is a replicated chat as one instance holds it: its session's and
// chat's states, the serverSeq of the last action of each it published,
// and the two locks that order its writers and its readers.
//
// Whoever decides on the chat and writes its log holds the writer lock
// (Lock) across the write, which may wait on a database up to Wait. The
// states have a lock of their own, held only while they are read or
// changed and never across a write: a slow log holds up the chat's
// writers, not its subscribers. Apply and ApplySession change them and
// are called with the writer lock held; the readers (SessionSnapshot,
// ChatSnapshot, State, Follow) take only the states' lock.
//
// A Chat is set up (its exported fields, then Reset) before anyone else
// holds it, and is not copied after.
type Chat struct {
	Publisher *Publisher
	// SessionURI and ChatURI are the channels it publishes on.
	SessionURI, ChatURI string
	// Feed, when set, gets every chat action applied, after the bus.
	Feed *feed.Feed[ahp.Action]

	writing sync.Mutex
	mu      sync.Mutex
	session ahp.SessionState
	chat    ahp.ChatState
	// sessionSeq and chatSeq are the serverSeq of the last action
	// published on each channel.
	sessionSeq, chatSeq int64
	dropped             int // ended turns of the chat's history older than chat's
	gone                bool
}

// Lock takes the chat's writer lock: whoever decides on the chat and
// writes its log holds it.
func (c *Chat) Lock() { c.writing.Lock() }

// Unlock releases the writer lock.
func (c *Chat) Unlock() { c.writing.Unlock() }

// Reset sets the chat's states, as a replay of its log made them (the
// reducers, Window and Catalogued); dropped is how many ended turns of
// its history are older than those chat holds. Nothing is published: a
// chat read again ends its channels, so that their subscribers take a
// new snapshot.
func (c *Chat) Reset(session ahp.SessionState, chat ahp.ChatState, dropped int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.session, c.chat, c.dropped = session, chat, dropped
}

// Apply applies a chat action, keeping the chat's latest ended turns, and
// publishes it on the bus and the feed. When the chat's status or the
// time it was modified changed, the session's catalogue follows, and the
// change is returned for the holder's listing (changed is true). Called
// with the writer lock held.
func (c *Chat) Apply(a ahp.Action, origin *engine.Origin) (change ahp.PartialSessionSummary, changed bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	prev := c.chat
	c.applyMu(a)
	if seq, err := c.Publisher.Bus.Publish(c.ChatURI, engine.Event{Action: a, Origin: origin}); err != nil {
		c.logger().Error("replica: a chat action did not publish", "chat", c.ChatURI, "err", err)
	} else {
		c.chatSeq = seq
	}
	if c.Feed != nil {
		c.Feed.Publish(a)
	}
	if prev.Status == c.chat.Status && prev.ModifiedAt == c.chat.ModifiedAt {
		return ahp.PartialSessionSummary{}, false
	}
	st, mod := c.chat.Status, c.chat.ModifiedAt
	c.applySessionMu(ahp.ChatUpdated(c.ChatURI, ahp.PartialChatSummary{Status: &st, ModifiedAt: &mod}), nil)
	return ahp.PartialSessionSummary{Status: &st, ModifiedAt: &mod}, true
}

// ApplySession applies a session action and publishes it. Called with
// the writer lock held.
func (c *Chat) ApplySession(a ahp.Action, origin *engine.Origin) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.applySessionMu(a, origin)
}

// Publish publishes an event on the chat's channel that changes no state
// (one client's page of older turns), unless the chat has ended
// (ErrGone).
func (c *Chat) Publish(e engine.Event) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gone {
		return ErrGone
	}
	seq, err := c.Publisher.Bus.Publish(c.ChatURI, e)
	if err != nil {
		return err
	}
	c.chatSeq = seq
	return nil
}

// End marks the chat ended: Gone reports true, and Publish and Follow
// refuse. It reports whether the chat had not ended yet.
func (c *Chat) End() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	was := c.gone
	c.gone = true
	return !was
}

// Gone reports whether the chat has ended.
func (c *Chat) Gone() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gone
}

// State returns the session's and the chat's states, and how many ended
// turns of the chat's history are older than those it holds.
func (c *Chat) State() (session ahp.SessionState, chat ahp.ChatState, dropped int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.session, c.chat, c.dropped
}

// ChatState returns the chat's state.
func (c *Chat) ChatState() ahp.ChatState {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.chat
}

// SessionState returns the session's state.
func (c *Chat) SessionState() ahp.SessionState {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.session
}

// SessionSnapshot is the session's state with the serverSeq of the last
// action published on it, for a subscription.
func (c *Chat) SessionSnapshot() engine.Snapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	return engine.Snapshot{State: c.session, Seq: c.sessionSeq}
}

// ChatSnapshot is the chat's state with the serverSeq of the last action
// published on it, for a subscription.
func (c *Chat) ChatSnapshot() engine.Snapshot {
	c.mu.Lock()
	defer c.mu.Unlock()
	return engine.Snapshot{State: c.chat, Seq: c.chatSeq}
}

// Follow returns the chat's state and every chat action applied after it,
// from the feed, until ctx ends; ok is false once the chat has ended or
// when it has no feed.
func (c *Chat) Follow(ctx context.Context) (chat ahp.ChatState, actions <-chan ahp.Action, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gone || c.Feed == nil {
		return ahp.ChatState{}, nil, false
	}
	return c.chat, c.Feed.Subscribe(ctx), true
}

// applyMu applies a to the chat, keeping its latest ended turns. Called
// with mu held.
func (c *Chat) applyMu(a ahp.Action) {
	c.chat, c.dropped = Window(ahp.ApplyChat(c.chat, a), c.dropped, c.Publisher.Keep, c.Publisher.Paged)
}

// Window keeps the latest keep ended turns of the chat s, of whose
// history dropped ended turns are older than those s holds, and answers
// it with the new count of older turns. The latest ended turn is always
// kept (keep is at least 1), so chat/turnResume, which reopens it, finds
// it. With paged the chat says that count in turnsNextCursor, for
// fetchTurns.
func Window(s ahp.ChatState, dropped, keep int, paged bool) (ahp.ChatState, int) {
	n := len(s.Turns) - max(keep, 1)
	if n <= 0 {
		return s, dropped
	}
	dropped += n
	s.Turns = slices.Clone(s.Turns[n:]) // a copy, so the dropped turns can be freed
	if paged {
		s.TurnsNextCursor = strconv.Itoa(dropped)
	}
	return s, dropped
}

// applySessionMu applies a to the session and publishes it. Called with
// mu held.
func (c *Chat) applySessionMu(a ahp.Action, origin *engine.Origin) {
	c.session = ahp.ApplySession(c.session, a)
	seq, err := c.Publisher.Bus.Publish(c.SessionURI, engine.Event{Action: a, Origin: origin})
	if err != nil {
		c.logger().Error("replica: a session action did not publish", "session", c.SessionURI, "err", err)
		return
	}
	c.sessionSeq = seq
}

func (c *Chat) logger() *slog.Logger {
	if l := c.Publisher.Log; l != nil {
		return l
	}
	return slog.New(slog.DiscardHandler)
}
