package catalog

import (
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"
)

// BenchmarkFanOut1000 measures the time from a record change sent by the
// Source to its catalogue action being queued for 1,000 subscribers, each on
// its own connection through a transport.Server pipe, each of whom may read
// the bot. It reports the median and the 99th percentile.
func BenchmarkFanOut1000(b *testing.B) {
	const subscribers = 1000
	e := newEnv(b, Config{}, defaultBots()...)
	tokens := []string{"root", "getter", "lister", "alice"}
	for i := range subscribers {
		c := e.dial(tokens[i%len(tokens)])
		c.subscribe(URI)
		go func() { // read what the server sends, as a client does
			for {
				if _, err := c.conn.Recv(c.ctx); err != nil {
					return
				}
			}
		}()
	}
	applied := func() int64 {
		e.cat.mu.Lock()
		defer e.cat.mu.Unlock()
		return e.cat.applied
	}
	took := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		r := bot("alpha", "user:alice")
		r.Description = fmt.Sprint(i)
		want := e.src.sentCount() + 1
		start := time.Now()
		e.src.put(r)
		for applied() < want {
			runtime.Gosched()
		}
		took = append(took, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Microseconds()), "median-µs")
	b.ReportMetric(float64(took[min(len(took)-1, len(took)*99/100)].Microseconds()), "p99-µs")
}
