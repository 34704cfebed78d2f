package mainchat

import (
	"context"
	"errors"
	"io/fs"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/chatlog"
	"github.com/agenthost/bots/replica"
)

// With shared logs that can be followed (chatlog.Shared: instances on one
// database), every instance holds every chat and any of them writes it.
// The log orders the writers: a chat's line goes in only at the count of
// lines the instance has applied (writeLocked), so of two instances
// writing at once one gets in and the other reads and applies what it
// missed and decides again on the chat as it is now (emitChatLocked
// reports false). The follower (follow) hears of every write to a chat's
// log and applies the lines other instances wrote, in order, through the
// same reducers as a replay, publishing each action to the chat's
// subscribers here: a client of any instance sees the same actions in
// the same order. What a line means to the instance that runs the chat's
// turn (its cancel, an answer, a steering message) is done there
// (effectsLocked).

// follow applies what other instances write to the chats' logs until
// ctx ends.
func (c *Chats) follow(ctx context.Context) {
	if err := replica.Follow(ctx, c.sh, chatlog.Chat, c, c.logger); err != nil {
		c.logger.Error("bot: the chats' logs are no longer followed", "err", err)
	}
}

// Heard takes a write to the log of key, which now holds n lines (0: it
// was removed) (replica.Follower).
func (c *Chats) Heard(ctx context.Context, key chatlog.Key, n int64) {
	c.mu.Lock()
	ch := c.bySession[key.Session]
	c.mu.Unlock()
	switch {
	case ch != nil && ch.log.Key != key:
	case n == 0:
		if ch != nil {
			c.removed(ch)
		}
	case ch == nil:
		c.added(key)
	default:
		ch.head.Store(n)
		ch.Lock()
		if n > ch.log.Lines && ch.log.Lines > 0 {
			ch.catchUpLocked()
		}
		ch.Unlock()
	}
}

// Held returns the keys of the chats' logs, but those being made
// (replica.Follower).
func (c *Chats) Held() []chatlog.Key {
	all := c.all()
	keys := make([]chatlog.Key, 0, len(all))
	for _, ch := range all {
		ch.Lock()
		creating := ch.log.Lines == 0 // its log is being made
		ch.Unlock()
		if !creating {
			keys = append(keys, ch.log.Key)
		}
	}
	return keys
}

// added holds a chat another instance opened.
func (c *Chats) added(key chatlog.Key) {
	c.mu.Lock()
	skip := c.disposed[key.Session]
	c.mu.Unlock()
	if skip {
		return
	}
	ch := c.load(key, true)
	if ch == nil {
		return
	}
	c.mu.Lock()
	if c.bySession[ch.SessionURI] != nil || c.byChat[ch.SessionURI] != nil || c.disposed[ch.SessionURI] {
		c.mu.Unlock()
		return
	}
	c.bySession[ch.SessionURI] = ch
	c.byChat[ch.ChatURI] = ch
	c.mu.Unlock()
	c.notify(ch.owner, "root/sessionAdded", ahp.SessionAddedParams{Channel: ahp.RootURI, Summary: ch.summary()})
}

// removed lets go of a chat another instance disposed of.
func (c *Chats) removed(ch *chat) {
	if !c.letGo(ch, false) {
		return
	}
	c.notify(ch.owner, "root/sessionRemoved", ahp.SessionRemovedParams{Channel: ahp.RootURI, Session: ch.SessionURI})
}

// catchUpLocked reads the lines of the chat's log after the ones it holds
// and applies them in order, publishing each action to the chat's
// subscribers. A chat that held a turn as interrupted in memory alone
// (repair) is read again from its whole log: someone else writes it, so
// the turn may not be interrupted at all.
func (ch *chat) catchUpLocked() {
	if ch.c.sh == nil || ch.Gone() {
		return
	}
	raw, err := ch.log.ReadNew(context.Background())
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) { // removed: the follower hears it
			ch.c.logger.Warn("bot: a chat's new lines could not be read", "log", ch.log.Key, "err", err)
		}
		return
	}
	if len(raw) == 0 {
		return
	}
	if ch.repair != nil {
		ch.reloadLocked()
		return
	}
	lines, bad := replica.Decode[logLine](raw, ch.log.Lines, nil)
	for _, b := range bad {
		ch.c.logger.Warn("bot: chat log", "log", ch.log.Key, "problem", b)
	}
	ch.log.Lines += int64(len(raw))
	for _, l := range lines {
		if m, ok := l.Meta[BotMeta].(map[string]any); ok {
			ch.mark = m
		}
		if l.Action == nil {
			continue
		}
		switch l.Kind {
		case replica.LineChat:
			ch.applyChatLocked(*l.Action, nil)
		case replica.LineSession:
			ch.ApplySession(*l.Action, nil)
		}
	}
	ch.effectsLocked(lines)
}

// reloadLocked reads the chat again from its whole log, as another
// instance writes it, and ends its channels so that their subscribers
// take a new snapshot.
func (ch *chat) reloadLocked() {
	fresh := ch.c.load(ch.log.Key, true)
	if fresh == nil {
		return
	}
	ch.Reset(fresh.State())
	ch.mark, ch.log.Lines, ch.repair = fresh.mark, fresh.log.Lines, nil
	ch.head.Store(fresh.log.Lines)
	ch.c.bus.End(ch.SessionURI)
	ch.c.bus.End(ch.ChatURI)
	ch.effectsLocked(nil)
}

// effectsLocked does, on the instance that runs the chat's turn, what the
// lines another instance wrote ask of it: a turn cancelled there is
// stopped here; answers and a steering message are handed to the back
// session. A chat left idle with messages queued starts the first one (on
// whichever instance writes its start first).
func (ch *chat) effectsLocked(lines []logLine) {
	var effects []func()
	ctx := context.Background()
	if t := ch.turn; t != nil {
		if at := ch.ChatState().ActiveTurn; at == nil || at.ID != ch.turnID {
			ch.turn = nil
			effects = append(effects, t.Stop) // the turn's goroutine starts the next message
		} else {
			for _, l := range lines {
				if l.Kind != replica.LineChat || l.Action == nil {
					continue
				}
				a := *l.Action
				switch b := a.Body.(type) {
				case *ahp.ChatInputAnswerChangedAction, *ahp.ChatInputCompletedAction, *ahp.ChatToolCallConfirmedAction:
					effects = append(effects, func() {
						if err := t.Answer(ctx, a); err != nil {
							ch.c.logger.Warn("bot: an answer could not be handed to the back session", "chat", ch.ChatURI, "action", a.Type, "err", err)
						}
					})
				case *ahp.ChatPendingMessageSetAction:
					if b.Kind == ahp.PendingSteering {
						id, text := b.ID, b.Message.Text
						effects = append(effects, func() { ch.steer(ctx, t, id, text) })
					}
				}
			}
		}
	} else if ch.ChatState().ActiveTurn == nil && len(ch.ChatState().QueuedMessages) > 0 {
		effects = append(effects, func() { ch.next(ctx) })
	}
	if len(effects) > 0 {
		ch.c.goTask(func() {
			for _, f := range effects {
				f()
			}
		})
	}
}

// goTask runs f in a goroutine close waits for, unless the chats are
// closing.
func (c *Chats) goTask(f func()) {
	c.taskMu.Lock()
	defer c.taskMu.Unlock()
	if c.closed.Load() {
		return
	}
	c.tasks.Add(1)
	go func() {
		defer c.tasks.Done()
		f()
	}()
}

// syncLocked applies the lines the follower heard another instance write
// and the chat does not hold yet, so that an action is decided on the chat
// as it is.
func (ch *chat) syncLocked() {
	if ch.c.sh != nil && ch.head.Load() > ch.log.Lines && ch.log.Lines > 0 {
		ch.catchUpLocked()
	}
}
