package mainchat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/chatlog"
	"github.com/agenthost/bots/engine"
	"github.com/agenthost/bots/errcode"
	"github.com/agenthost/bots/replica"
)

// A chat holds only its latest ended turns in memory (replica.Publisher.Keep, replica.Window); the
// older ones are in its log. A turn's place in the chat's history is the
// number of turns that ended before it, and a cursor is the place of the
// oldest turn a client holds: the chat's snapshot carries the place of
// the oldest turn in memory as turnsNextCursor, and fetchTurns with a
// cursor answers the turns just before it, read back from the log.

// fetchTurnsParams are the params of fetchTurns.
type fetchTurnsParams struct {
	// Channel is the chat.
	Channel string `json:"channel"`
	// Cursor is a turnsNextCursor the chat gave: the turns before it are
	// wanted. Empty means those before the turns the chat holds now.
	Cursor string `json:"cursor,omitempty"`
}

// FetchTurns answers fetchTurns on a chat: before it answers, the calling
// client's subscriptions to the chat get chat/turnsLoaded with the page
// of turns before the cursor, read from the chat's log, and the cursor of
// still older ones. Nobody else's state changes: the chat's own keeps its
// window.
func (c *Chats) FetchTurns(ctx context.Context, call engine.Call) error {
	var p fetchTurnsParams
	if err := call.Decode(&p); err != nil {
		return err
	}
	ch := c.get(call.URI)
	if ch == nil || ch.ChatURI != call.URI {
		return errcode.New(errcode.NotFound, "no chat %s", call.URI)
	}
	if !ch.mayUse(ctx, c.bots.Principal(call.Principal)) {
		return errcode.New(errcode.PermissionDenied, "Permission denied: %s", call.URI)
	}
	_, _, to := ch.State()
	if p.Cursor != "" {
		n, err := strconv.Atoi(p.Cursor)
		if err != nil || n < 1 || n > to {
			return errcode.New(errcode.Invalid, "unknown cursor %q", p.Cursor)
		}
		to = n
	}
	from := max(to-c.page, 0)
	turns := []ahp.Turn{}
	if to > 0 {
		var err error
		if turns, err = olderTurns(c.logs, ch.log.Key, from, to); err != nil {
			return fmt.Errorf("read the older turns of %s: %w", ch.ChatURI, err)
		}
	}
	next := ""
	if from > 0 {
		next = strconv.Itoa(from)
	}
	// marshalled here, not under the Bus's lock where For runs.
	a, err := engine.Marshal(ahp.TurnsLoaded(turns, next))
	if err != nil {
		return fmt.Errorf("marshal the older turns of %s: %w", ch.ChatURI, err)
	}
	who := call.Principal.String()
	err = ch.Publish(engine.Event{For: func(sub *engine.Subscriber) (any, bool) {
		return a, sub.ClientID == call.ClientID && sub.Principal.String() == who
	}})
	if errors.Is(err, replica.ErrGone) {
		return errcode.New(errcode.NotFound, "no chat %s", call.URI)
	}
	return err
}

// olderTurns replays the chat's log and returns the turns at places from
// to to (not included) of the chat's history. It decodes the log's lines
// only as far as the turn at to: paging back through a long chat decodes
// less the further back it goes. A line that does not decode is skipped,
// as a replay skips it.
func olderTurns(logs chatlog.Logs, key chatlog.Key, from, to int) ([]ahp.Turn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), replica.Wait)
	defer cancel()
	raw, _, err := logs.Read(ctx, key)
	if err != nil {
		return nil, err
	}
	out := make([]ahp.Turn, 0, to-from)
	collect := func(turns []ahp.Turn, at int) {
		for i, t := range turns {
			if k := at + i; k >= from && k < to {
				out = append(out, t)
			}
		}
	}
	var s ahp.ChatState
	dropped := 0
	for _, r := range raw {
		if dropped >= to {
			break
		}
		var l logLine
		if json.Unmarshal(r, &l) != nil || l.Kind != replica.LineChat || l.Action == nil {
			continue
		}
		s = ahp.ApplyChat(s, *l.Action)
		if n := len(s.Turns) - 1; n > 0 {
			collect(s.Turns[:n], dropped)
			s, dropped = replica.Window(s, dropped, 1, true)
		}
	}
	collect(s.Turns, dropped)
	return out, nil
}

// SetWindow sets how many ended turns the chats hold in memory and how
// many one fetchTurns answers, for tests of the window; the chats already
// open (replayed) keep that many from now on.
func (c *Chats) SetWindow(keep, page int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.pub.Keep, c.page = keep, page
	for _, ch := range c.bySession {
		ch.Lock()
		ss, cs, dropped := ch.State()
		cs, dropped = replica.Window(cs, dropped, keep, true)
		ch.Reset(ss, cs, dropped)
		ch.Unlock()
	}
}
