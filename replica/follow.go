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
	// Held returns the keys of the logs the follower holds now (a log it
	// is making may be left out), which a gap asks about again.
	Held() []chatlog.Key
}

// Follow tells f of every write to the logs of kind sh holds, from one
// goroutine, until ctx ends. After a gap in which writes may have been
// missed (the first time it listens, and after a dropped connection) it
// reads how many lines every log holds and tells f of each log it holds
// (0 for one removed meanwhile) and of each it does not; a gap whose
// counts cannot be read is logged and left until the next one. It
// returns what ended the following, nil once ctx ended.
func Follow(ctx context.Context, sh chatlog.Shared, kind chatlog.Kind, f Follower, log *slog.Logger) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	err := sh.Follow(ctx, kind, func(key chatlog.Key, n int64) {
		if key != (chatlog.Key{}) {
			f.Heard(ctx, key, n)
			return
		}
		// What the follower holds is asked before the counts are read: a
		// log it made meanwhile is not in the counts, and would be taken
		// for one removed (its own write tells of it next).
		holds := f.Held()
		heads, err := sh.Heads(ctx, kind)
		if err != nil {
			if ctx.Err() == nil {
				log.Warn("replica: the logs could not be read again after a gap", "kind", kind, "err", err)
			}
			return
		}
		held := map[chatlog.Key]bool{}
		for _, key := range holds {
			held[key] = true
			f.Heard(ctx, key, heads[key])
		}
		for key, n := range heads {
			if !held[key] {
				f.Heard(ctx, key, n)
			}
		}
	})
	if ctx.Err() != nil {
		return nil
	}
	return err
}
