package replica

import (
	"context"
	"log/slog"

	"github.com/agenthost/bots/chatlog"
)

// Follower is the holder of the chats whose logs Follow follows.
type Follower interface {
	// Heard tells that the log of key holds n lines now, after a write to
	// it by any instance; 0 says it was removed.
	Heard(ctx context.Context, key chatlog.Key, n int64)
	// Resync tells how many lines every log of the kind holds, after a
	// gap in which writes may have been missed (the first time Follow
	// listens, and after a dropped connection): a log the follower holds
	// that heads lacks was removed.
	Resync(ctx context.Context, heads map[chatlog.Key]int64)
}

// Follow tells f of every write to the logs of kind sh holds, from one
// goroutine, until ctx ends; a gap is told as Resync. A gap whose heads
// cannot be read is logged and left until the next one. It returns what
// ended the following, nil once ctx ended.
func Follow(ctx context.Context, sh chatlog.Shared, kind chatlog.Kind, f Follower, log *slog.Logger) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	err := sh.Follow(ctx, kind, func(key chatlog.Key, n int64) {
		if key != (chatlog.Key{}) {
			f.Heard(ctx, key, n)
			return
		}
		heads, err := sh.Heads(ctx, kind)
		if err != nil {
			if ctx.Err() == nil {
				log.Warn("replica: the logs could not be read again after a gap", "kind", kind, "err", err)
			}
			return
		}
		f.Resync(ctx, heads)
	})
	if ctx.Err() != nil {
		return nil
	}
	return err
}
