package wake_test

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/record"
	"github.com/agenthost/bots/wake"
	"github.com/agenthost/bots/wake/echo"
	"github.com/agenthost/bots/wake/internal/maintest"
	"github.com/agenthost/bots/wake/local"
	"github.com/agenthost/bots/wake/memrows"
)

// BenchmarkWakeToQueuedMessage is the wake's own overhead, in process: from
// a main turn handed to the Waker to the back session's chat holding the
// queued message (its chat/pendingMessageSet), on a session already
// started. It reports p50 and p99.
func BenchmarkWakeToQueuedMessage(b *testing.B) {
	h, err := local.New(local.Config{Harnesses: map[string]wake.Harness{"idle": idle{}}})
	if err != nil {
		b.Fatal(err)
	}
	defer h.Close()
	w, err := wake.New(wake.Config{Host: h, Rows: &memrows.Rows{}, DefaultAgent: "idle"})
	if err != nil {
		b.Fatal(err)
	}
	defer w.Close()
	bot := record.Record{ID: "motion", Name: "Motion", Workspace: b.TempDir()}
	warm := maintest.New("warm", "hi")
	turn := w.Wake(wake.Message{Bot: bot, Person: "user:soft", Session: "s", Chat: "c", TurnID: "warm", Text: "hi", StartedAt: time.Now()}, warm)
	for turn.Session() == "" {
		time.Sleep(time.Millisecond) // the first wake starts the session; polling, not a wait for a result
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_, ch, err := h.Follow(ctx, turn.Session())
	if err != nil {
		b.Fatal(err)
	}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		id := fmt.Sprintf("t%d", i)
		start := time.Now()
		w.Wake(wake.Message{Bot: bot, Person: "user:soft", Session: "s", Chat: "c", TurnID: id, Text: "hi", StartedAt: start}, maintest.New(id, "hi"))
		for a := range ch {
			if a.Type == ahp.ActionChatPendingMessageSet {
				break
			}
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Nanoseconds())/1e6, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Nanoseconds())/1e6, "p99-ms")
}

// idle is a harness whose turns wait until stopped, so messages queue.
type idle struct{}

func (idle) Open(ctx context.Context, s wake.SessionInfo) (wake.Agent, error) { return idle{}, nil }
func (idle) Turn(ctx context.Context, w wake.Work) error                      { <-ctx.Done(); return nil }
func (idle) Close() error                                                     { return nil }

var _ = echo.Provider
