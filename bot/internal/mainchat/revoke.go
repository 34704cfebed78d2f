package mainchat

import (
	"context"
	"errors"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/engine"
	"github.com/agenthost/bots/record"
	"github.com/agenthost/bots/wake"
)

// What a person keeps open with a bot - a chat's subscriptions, its running
// turn, their back sessions and the agents those run - lasts only while
// they may read the bot. Every request is judged with the principal the
// users directory gives now (mayUse, Bots.Reads), each turn as it begins
// (beginLocked), and what is already open is judged again by one sweep
// (this file) whenever the users directory or a bot's record changes: a
// membership or grant taken away, a person removed, a bot given to
// another owner (on the wire or by a hand edit of bot.md), a bot deleted.
// The sweep ends what no longer holds.

// botURI is the bot: URI of bot id.
func botURI(id string) string { return "bot://" + id }

// lostReason is the sentence a person's subscriptions to a chat end
// with when they may no longer read its bot.
func lostReason(id string) string {
	return "You may no longer read " + botURI(id) + ": this chat is closed to you."
}

// ownerLostReason is the sentence a turn fails with when it is begun in a
// chat whose owner may no longer read its bot.
func ownerLostReason(ch *chat) string {
	return "The chat's owner, " + ch.owner + ", may no longer read " + botURI(ch.bot) + ": nothing is woken for them."
}

// verdict is what a sweep finds of one (bot, person).
type verdict int

const (
	holds   verdict = iota // the person may read the bot
	lost                   // the bot is there and the person may not read it
	gone                   // the bot is deleted
	unknown                // its record could not be read: left as it is
)

// Rejudge asks for a sweep of every chat and back session: the users
// directory changed. It does not block.
func (c *Chats) Rejudge() {
	select {
	case c.kick <- struct{}{}:
	default: // a sweep is asked already
	}
}

// judge sweeps once at its start (a person may have lost a bot while the
// process was down), then at every rejudge and at every change of a
// bot's record (feed), until ctx ends.
func (c *Chats) judge(ctx context.Context, feed <-chan record.Change) {
	c.sweep(ctx, "")
	for {
		select {
		case <-ctx.Done():
			return
		case <-c.kick:
			c.sweep(ctx, "")
		case ch, ok := <-feed:
			if !ok {
				feed = nil
				continue
			}
			c.sweep(ctx, ch.ID)
		}
	}
}

// sweep judges every chat and back session of bot only (of every bot
// when only is ""), and ends what no longer holds: a chat whose owner may
// no longer read its bot is closed to them (closeTo); the running turn
// of a deleted bot's chat is cancelled; a back session whose person may
// no longer read its bot, or whose bot is deleted, is disposed of, its
// agent with it.
func (c *Chats) sweep(ctx context.Context, only string) {
	type pair struct{ bot, person string }
	seen := map[pair]verdict{}
	of := func(id, person string) verdict {
		k := pair{id, person}
		if st, ok := seen[k]; ok {
			return st
		}
		st := c.verdict(ctx, id, person)
		seen[k] = st
		return st
	}
	for _, ch := range c.all() {
		if only != "" && ch.bot != only {
			continue
		}
		switch of(ch.bot, ch.owner) {
		case holds:
			c.reopen(ch)
		case lost:
			c.closeTo(ch)
		case gone:
			ch.cancel()
		}
	}
	l, ok := c.host.(wake.Lister)
	if !ok {
		return
	}
	for _, b := range l.BackSessions() {
		if only != "" && b.Bot != only {
			continue
		}
		if st := of(b.Bot, b.Person); st == lost || st == gone {
			err := c.host.Dispose(ctx, b.Session)
			switch {
			case err == nil:
				c.logger.Info("bot: a back session was ended: its person may no longer read its bot", "session", b.Session, "bot", b.Bot, "person", b.Person)
			case !errors.Is(err, wake.ErrNoSession):
				c.logger.Warn("bot: a back session whose person may no longer read its bot could not be ended", "session", b.Session, "bot", b.Bot, "err", err)
			}
		}
	}
}

// verdict is whether person may read bot id now.
func (c *Chats) verdict(ctx context.Context, id, person string) verdict {
	e, err := c.store.Get(ctx, id)
	switch {
	case errors.Is(err, record.ErrNotFound):
		return gone
	case err != nil:
		if ctx.Err() == nil {
			c.logger.Warn("bot: a bot's record could not be read to judge who may still use its chats", "bot", id, "err", err)
		}
		return unknown
	}
	if c.bots.CanRead(c.bots.Person(person), e.Record) {
		return holds
	}
	return lost
}

// closeTo closes the chat to its owner, who may no longer read its bot:
// its running turn is cancelled (in the log too), the subscriptions of
// everyone but those who may do anything end with lostReason, and the
// owner's root subscriptions hear the session removed. The chat and its
// log stay: those who may do anything still see it, and it opens to the
// owner again when they may read the bot again (reopen).
func (c *Chats) closeTo(ch *chat) {
	was := ch.closed.Swap(true)
	ch.cancel()
	reason := lostReason(ch.bot)
	end := func(sub *engine.Subscriber) bool { return !c.bots.Principal(sub.Principal).Any() }
	c.bus.EndFor(ch.SessionURI, reason, end)
	c.bus.EndFor(ch.ChatURI, reason, end)
	if !was {
		c.logger.Info("bot: a chat was closed to its owner, who may no longer read its bot", "session", ch.SessionURI, "bot", ch.bot, "owner", ch.owner)
		c.notifyOwner(ch.owner, "root/sessionRemoved", ahp.SessionRemovedParams{Channel: ahp.RootURI, Session: ch.SessionURI})
	}
}

// reopen opens a chat closeTo closed to its owner again, who may read
// its bot again: their root subscriptions hear the session added.
func (c *Chats) reopen(ch *chat) {
	was := ch.closed.Swap(false)
	if was {
		c.notifyOwner(ch.owner, "root/sessionAdded", ahp.SessionAddedParams{Channel: ahp.RootURI, Summary: ch.summary()})
	}
}

// notifyOwner sends a root notification to the owner's own root
// subscribers, not to those who may do anything.
func (c *Chats) notifyOwner(owner, method string, params any) {
	to := func(sub *engine.Subscriber) bool {
		p := c.bots.Principal(sub.Principal)
		return !p.Any() && p.Owns(owner)
	}
	if err := c.bus.NotifyFor(ahp.RootURI, method, params, to); err != nil {
		c.logger.Warn("bot: a root notification did not go out", "method", method, "err", err)
	}
}

// cancel ends the main turn this instance runs in the chat as cancelled,
// in the log too, and stops its wake: the back turn is stopped. A turn
// another instance runs is that instance's to cancel.
func (ch *chat) cancel() {
	ch.Lock()
	t, id := ch.turn, ch.turnID
	if t == nil {
		ch.Unlock()
		return
	}
	ch.turn = nil
	d := ch.c.now().Sub(ch.began)
	ch.syncLocked()
	ch.emitWhileLocked(ahp.TurnCancelled(id, d), activeIs(id))
	ch.Unlock()
	t.Stop()
}
