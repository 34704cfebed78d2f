package catalog

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agenthost/bots/internal/cputime"
)

// fanOutSizes are the subscriber counts of BenchmarkFanOut's curve;
// BOTS_FANOUT_100K=1 adds 100,000 (about a minute to connect, 2 GiB).
func fanOutSizes() []int {
	sizes := []int{1000, 10000}
	if os.Getenv("BOTS_FANOUT_100K") != "" {
		sizes = append(sizes, 100000)
	}
	return sizes
}

// BenchmarkFanOut is one edit of a bot reaching n catalogue subscribers,
// each on its own connection through a transport.Server pipe, each of whom
// may read the bot, at n = 1,000 and 10,000. It reports the median and the
// 99th percentile of two times from the Source's change: until the
// catalogue action is queued for every subscriber (queued-), and until
// every subscriber's client has received it (delivered-), and the CPU
// time the process spent per edit, which a machine shared with other work
// does not inflate (the clients' reading is in it). Goal at 10,000: p99 ≤
// 250 ms on 2 cores.
func BenchmarkFanOut(b *testing.B) {
	for _, n := range fanOutSizes() {
		b.Run(fmt.Sprintf("subscribers=%d", n), func(b *testing.B) { fanOut(b, n) })
	}
}

// BenchmarkFanOut1000 is BenchmarkFanOut at 1,000 subscribers, under the
// name earlier records used.
func BenchmarkFanOut1000(b *testing.B) { fanOut(b, 1000) }

func fanOut(b *testing.B, subscribers int) {
	e := newEnv(b, Config{}, defaultBots()...)
	tokens := []string{"root", "getter", "lister", "alice"}
	var received atomic.Int64
	for i := range subscribers {
		c := e.dial(tokens[i%len(tokens)])
		c.subscribe(URI)
		go func() { // read what the server sends, as a client does
			for {
				if _, err := c.conn.Recv(c.ctx); err != nil {
					return
				}
				received.Add(1)
			}
		}()
	}
	applied := func() int64 {
		e.cat.mu.Lock()
		defer e.cat.mu.Unlock()
		return e.cat.applied
	}
	queued := make([]time.Duration, 0, b.N)
	delivered := make([]time.Duration, 0, b.N)
	cpu := cputime.Process()
	for i := 0; b.Loop(); i++ {
		r := bot("alpha", "user:alice")
		r.Description = fmt.Sprint(i)
		want := e.src.sentCount() + 1
		wantReceived := received.Load() + int64(subscribers)
		start := time.Now()
		e.src.put(r)
		for applied() < want {
			runtime.Gosched()
		}
		queued = append(queued, time.Since(start))
		for received.Load() < wantReceived {
			runtime.Gosched()
		}
		delivered = append(delivered, time.Since(start))
	}
	b.ReportMetric(float64((cputime.Process()-cpu).Microseconds())/float64(len(queued)), "cpu-µs/edit")
	reportPercentiles(b, "queued", queued)
	reportPercentiles(b, "delivered", delivered)
}

// reportPercentiles reports the median and the 99th percentile of took,
// in µs, under the given prefix.
func reportPercentiles(b *testing.B, prefix string, took []time.Duration) {
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds()), prefix+"-median-µs")
	b.ReportMetric(float64(took[min(len(took)-1, len(took)*99/100)].Microseconds()), prefix+"-p99-µs")
}
