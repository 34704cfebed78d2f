package bot

import (
	"context"
	"errors"

	"github.com/agenthost/bots/access"
	"github.com/agenthost/bots/record"
	"github.com/agenthost/bots/wake"
)

// What a person keeps open with a bot - a chat's subscriptions, its running
// turn, their back sessions and the agents those run - lasts only while
// they may read the bot. Every request is judged with the principal the
// users directory gives now (readsBot here, the chats' mayUse), each turn
// as it begins, and what is already open is judged again by one sweep
// (the chats', internal/mainchat/revoke.go) whenever the users directory or a bot's record changes: a
// membership or grant taken away, a person removed, a bot given to
// another owner (on the wire or by a hand edit of bot.md), a bot deleted.
// The sweep ends what no longer holds.

// readsBot reports whether p may talk with bot id now, as its record is
// now: p may read it. A bot that is gone leaves nothing to read: its chats
// stay their owners', where a message fails saying the bot was deleted.
// A record that cannot be read refuses.
func (s *Service) readsBot(ctx context.Context, p access.Principal, id string) bool {
	if p.Any() {
		return true
	}
	e, err := s.store.Get(ctx, id)
	switch {
	case errors.Is(err, record.ErrNotFound):
		return true
	case err != nil:
		return false
	}
	return CanRead(p, e.Record)
}

// keepsBackSession reports whether p, whom the session host lets open the
// channel at uri, may open it now: a back session's channels open only
// while p may read its bot.
func (s *Service) keepsBackSession(ctx context.Context, p access.Principal, uri string) bool {
	l, ok := s.chats.Host().(wake.Lister)
	if !ok || p.Any() {
		return true
	}
	b, ok := l.HeldAt(uri)
	return !ok || s.readsBot(ctx, p, b.Bot)
}

// personNow is who an owner string (a chat's, a back session's person)
// is as the users directory has them now.
func (s *Service) personNow(owner string) access.Principal {
	return access.OwnerPrincipal(owner, access.Lookup(s.users))
}
