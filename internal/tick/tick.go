// Package tick runs a function at a steady period until a context ends:
// the loop that renews leases, watches for dead turns and prunes, written
// once.
package tick

import (
	"context"
	"time"
)

// Every calls f each period, the first time one period after it is
// called, until ctx ends or f returns false. A call that outlasts the
// period is followed by the next at once, and ticks missed meanwhile are
// dropped (time.Ticker). It returns when it stops; period must be
// positive.
func Every(ctx context.Context, period time.Duration, f func() bool) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if ctx.Err() != nil || !f() {
			return
		}
	}
}
