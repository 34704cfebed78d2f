package mainchat

import (
	"context"
	"time"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/internal/tick"
	"github.com/agenthost/bots/replica"
)

// A main turn whose instance dies would stay in progress on the instances
// that follow its chat: nobody else ends it. So the instance that runs a
// main turn holds a lease on it (turnKey), renewed every TTL/3 while the
// turn runs and released when it ends; and every instance watches the
// turns it follows but does not run (watch), every TTL/5. A turn in
// progress for a TTL or longer, since it began here or since the watcher
// first saw it, whose lease it can take (its holder stopped renewing it,
// or did not take it within a TTL of beginning it) is ended there as
// executionInterrupted and resumable, appended at the count the chat
// holds: of several instances doing so at once the log lets one in, and a
// late line of the dead instance's turn loses the same race (its turn has
// ended in the log). The watcher releases the lease at once, so that a
// resume anywhere runs the turn again under a lease of its own.

// turnKey is the lease of a chat's main turn.
func turnKey(session, turnID string) string { return "turn " + session + " " + turnID }

// holdTurn holds the lease of a main turn this instance runs until done is
// closed or the chats close, then releases it. A lease another holder has
// (a watcher that read the turn as dead) is tried again after 50 ms, then
// twice as long each time up to TTL/3: the turn is ended by whoever holds
// it.
func (c *Chats) holdTurn(ctx context.Context, key string, done <-chan struct{}) {
	c.meters.held.Inc()
	defer c.meters.held.Add(-1)
	var token int64
	warned := false
	acquire := func() {
		actx, cancel := context.WithTimeout(ctx, c.leaseTTL)
		defer cancel()
		l, ok, err := c.leases.Acquire(actx, key, c.holder, c.leaseTTL)
		switch {
		case err != nil:
			if ctx.Err() == nil {
				c.logger.Warn("bot: a main turn's lease could not be taken or renewed", "lease", key, "err", err)
			}
		case !ok:
			token = 0
			if !warned {
				warned = true
				c.logger.Warn("bot: a main turn's lease is held by another instance", "lease", key, "holder", l.Holder)
			}
		default:
			token = l.Token
		}
	}
	acquire()
	tick := time.NewTicker(c.leaseTTL / 3)
	defer tick.Stop()
	// A lease not taken is tried again soon, then less and less often up
	// to TTL/3: a watcher holds it a moment while it looks (it finds the
	// turn resumed and lets go), and the watchers must find it held.
	retry := 50 * time.Millisecond
	for {
		var soon <-chan time.Time
		if token == 0 {
			soon = time.After(retry)
			retry = min(2*retry, c.leaseTTL/3)
		}
		select {
		case <-tick.C:
			acquire() // a renewal when held: the token stays
			continue
		case <-soon:
			acquire()
			continue
		case <-done:
		case <-ctx.Done():
		}
		break
	}
	if token != 0 {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.leaseTTL)
		defer cancel()
		if err := c.leases.Release(rctx, key, c.holder, token); err != nil {
			c.logger.Warn("bot: a main turn's lease could not be released", "lease", key, "err", err)
		}
	}
}

// watchEvery is how often an instance looks for followed main turns whose
// instance died, with leases of ttl: a turn whose instance dies reads as
// interrupted at most ttl + ttl/5 after (≤ 12 s with lease.DefaultTTL).
func watchEvery(ttl time.Duration) time.Duration { return ttl / 5 }

// watch ends, every period until ctx ends, the followed main turns whose
// instance stopped holding their lease.
func (c *Chats) watch(ctx context.Context, period time.Duration) {
	tick.Every(ctx, period, func() bool {
		for _, ch := range c.all() {
			if ctx.Err() != nil {
				return false
			}
			if id := ch.watchedTurn(c.now(), c.leaseTTL); id != "" {
				c.takeOver(ctx, ch, id)
			}
		}
		return true
	})
}

// watchedTurn returns the followed turn of the chat that has been in
// progress for ttl or longer at now, "" when there is none. Younger, its
// instance may not have taken its lease yet: a turn begins in the log
// before its instance reads the bot and wakes the agent, and on a loaded
// machine or database that can take more than a tick. It locks ch.
func (ch *chat) watchedTurn(now time.Time, ttl time.Duration) string {
	ch.Lock()
	defer ch.Unlock()
	ch.syncLocked()
	at := ch.ChatState().ActiveTurn
	if ch.Gone() || ch.turn != nil || at == nil || ch.log.Lines == 0 {
		ch.watched, ch.watchedSince = "", time.Time{}
		return ""
	}
	if ch.watched != at.ID {
		// Seen for the first time: since it began here, or since now.
		ch.watched = at.ID
		if ch.watchedSince.IsZero() {
			ch.watchedSince = now
		}
	}
	if now.Sub(ch.watchedSince) < ttl {
		return ""
	}
	return at.ID
}

// takeOver ends the chat's turn id as interrupted when its lease can be
// taken: the instance that ran it stopped renewing it.
func (c *Chats) takeOver(ctx context.Context, ch *chat, id string) {
	key := turnKey(ch.SessionURI, id)
	actx, cancel := context.WithTimeout(ctx, c.leaseTTL)
	l, ok, err := c.leases.Acquire(actx, key, c.holder, c.leaseTTL)
	cancel()
	if err != nil {
		if ctx.Err() == nil {
			c.logger.Warn("bot: a followed main turn's lease could not be checked", "lease", key, "err", err)
		}
		return
	}
	if !ok {
		return // its instance holds it: the turn runs there
	}
	c.meters.takeovers.Inc()
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.leaseTTL)
		defer cancel()
		if err := c.leases.Release(rctx, key, c.holder, l.Token); err != nil {
			c.logger.Warn("bot: a main turn's lease could not be released", "lease", key, "err", err)
		}
	}()
	ch.Lock()
	ended := false
	if at := ch.ChatState().ActiveTurn; at != nil {
		a := replica.Interrupted(id, at.StartedAt, ahp.FormatTime(c.now()), true)
		// watched is reset when a turn begins or is resumed: the turn in
		// progress now is not the one the watcher saw dead (it was ended
		// and resumed meanwhile, on another instance, which takes its
		// lease once this one lets it go).
		ended = ch.emitWhileLocked(a, func(s ahp.ChatState) bool {
			return ch.turn == nil && ch.watched == id && activeIs(id)(s)
		})
	}
	ch.Unlock()
	if ended {
		c.logger.Info("bot: a main turn whose instance stopped renewing its lease was ended as interrupted", "chat", ch.ChatURI, "turn", id)
		ch.next(context.WithoutCancel(ctx)) // the messages that waited behind it
	}
}
