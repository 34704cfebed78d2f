package tick_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/agenthost/bots/internal/tick"
)

func TestEveryCallsOncePerPeriodUntilTheContextEnds(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		start := time.Now()
		var at []time.Duration
		done := make(chan struct{})
		go func() {
			defer close(done)
			tick.Every(ctx, time.Second, func() bool {
				at = append(at, time.Since(start))
				return true
			})
		}()
		time.Sleep(3500 * time.Millisecond) // synctest's fake clock: no real wait
		cancel()
		<-done
		want := []time.Duration{time.Second, 2 * time.Second, 3 * time.Second}
		if len(at) != len(want) {
			t.Fatalf("called at %v, want %v", at, want)
		}
		for i := range want {
			if at[i] != want[i] {
				t.Fatalf("called at %v, want %v", at, want)
			}
		}
	})
}

func TestEveryStopsWhenTheFunctionSaysSo(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		calls := 0
		tick.Every(t.Context(), time.Second, func() bool {
			calls++
			return calls < 2
		})
		if calls != 2 {
			t.Fatalf("f was called %d times after it said stop at the second, want 2", calls)
		}
	})
}

func TestEveryDoesNotCallAfterTheContextEnded(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		called := false
		tick.Every(ctx, time.Second, func() bool { called = true; return true })
		if called {
			t.Fatal("f was called on a context that had ended")
		}
	})
}
