package waittest

import (
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agenthost/bots/internal/checktest"
)

func TestForReturnsOnceTheConditionHolds(t *testing.T) {
	t.Parallel()
	var n atomic.Int32
	go func() {
		for range 3 {
			n.Add(1)
		}
	}()
	For(t, "three", func() bool { return n.Load() == 3 })
}

func TestForFailsNamingWhatItWaitedFor(t *testing.T) {
	t.Parallel()
	got := checktest.Failures(t, func(tb testing.TB) {
		forWithin(tb, 20*time.Millisecond, "the moon", func() bool { return false })
	})
	if len(got) != 1 || !strings.Contains(got[0], "waiting for the moon") {
		t.Errorf("failures %q, want one naming the moon", got)
	}
}

func TestWithinSaysWhetherTheConditionHeldInTime(t *testing.T) {
	t.Parallel()
	if Within(10*time.Millisecond, func() bool { return false }) {
		t.Error("a condition that never holds held")
	}
	if !Within(time.Second, func() bool { return true }) {
		t.Error("a condition that holds did not")
	}
}

func TestALogTakesWritesFromManyGoroutinesAndWaitsForALine(t *testing.T) {
	t.Parallel()
	var l Log
	log := l.Logger(slog.LevelInfo)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() { log.Info("hello", "from", i) })
	}
	log.Debug("below the level")
	l.For(t, "from=7")
	wg.Wait()
	if got := strings.Count(l.String(), "msg=hello"); got != 8 {
		t.Errorf("%d lines, want 8:\n%s", got, l.String())
	}
	if strings.Contains(string(l.Bytes()), "below the level") {
		t.Error("a record below the logger's level was written")
	}
	l.Reset()
	if l.Len() != 0 {
		t.Errorf("after Reset the log holds %q", l.String())
	}
	got := checktest.Failures(t, func(tb testing.TB) { l.forWithin(tb, 20*time.Millisecond, "never said") })
	if len(got) != 1 || !strings.Contains(got[0], `"never said"`) {
		t.Errorf("failures %q, want one naming what was waited for", got)
	}
}
