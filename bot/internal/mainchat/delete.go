package mainchat

import (
	"context"

	"github.com/agenthost/bots/chatlog"
	"github.com/agenthost/bots/replica"
	"github.com/agenthost/bots/wake"
)

// DropBot removes what the chats keep of a deleted bot, as the file
// store's deletion removes its folder under the configuration folder: the
// logs of its chats and of its back sessions, and its back-session rows.
// Kept in the database (several instances), they would otherwise stay
// there for good and be replayed at every start. With shared logs every
// instance's follower hears the chats' logs removed and lets the chats
// go (sessionRemoved); with logs of this process alone the chats stay in
// memory until it ends, as they always have, and a message there fails
// saying the bot was deleted. Its back sessions held here are ended, and
// what the session host keeps of the bot's own goes (wake.BotForgetter:
// each ACP agent's HOME of the bot). The ACP agents' session records
// stay, as the file store keeps them (in each agent's folder). What
// cannot be removed is reported: the deletion itself is done.
func (c *Chats) DropBot(ctx context.Context, bot string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), replica.Wait)
	defer cancel()
	// The bot's running turns are cancelled, and logged so, before its
	// logs and back sessions go: a turn reads cancelled, not failed by
	// its session's end.
	c.sweep(ctx, bot)
	for _, kind := range []chatlog.Kind{chatlog.Chat, chatlog.Back} {
		keys, err := c.logs.List(ctx, kind)
		if err != nil {
			c.logger.Warn("bot: the logs of a deleted bot could not be listed", "bot", bot, "kind", kind, "err", err)
			continue
		}
		for _, k := range keys {
			if k.Bot != bot {
				continue
			}
			if err := c.logs.Remove(ctx, k); err != nil {
				c.logger.Warn("bot: a log of a deleted bot could not be removed", "log", k, "err", err)
			}
		}
	}
	if err := c.rows.RemoveBot(ctx, bot); err != nil {
		c.logger.Warn("bot: the back-session rows of a deleted bot could not be removed", "bot", bot, "err", err)
	}
	if f, ok := c.host.(wake.BotForgetter); ok {
		if err := f.ForgetBot(ctx, bot); err != nil {
			c.logger.Warn("bot: what the agents kept of a deleted bot (its HOMEs) could not all be removed", "bot", bot, "err", err)
		}
	}
}
