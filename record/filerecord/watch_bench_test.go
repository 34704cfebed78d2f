package filerecord_test

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/agenthost/bots/record"
	"github.com/agenthost/bots/record/filerecord"
)

// BenchmarkHandSaveToChange measures the time from a hand save of a bot.md
// (written in place) returning to its Updated change reaching a watcher of
// the store, one save at a time, spread over every bot of a store watching
// 1,000, 10,000 (and 100,000, see loadSizes) bots. It reports the median
// and the 99th percentile; run it with -benchtime=200x for 200 saves.
func BenchmarkHandSaveToChange(b *testing.B) {
	for _, n := range loadSizes() {
		b.Run(fmt.Sprintf("bots=%d", n), func(b *testing.B) {
			dir, _ := seeded(b, n)
			s, err := filerecord.Open(context.Background(), filerecord.Config{ConfigDir: dir, Watch: true})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			s.WaitWatched()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			changes, err := s.Watch(ctx)
			if err != nil {
				b.Fatal(err)
			}
			var took []time.Duration
			k := 0
			for b.Loop() {
				id := fmt.Sprintf("bot-%05d", (k*7919)%n)
				r := smallBot(id)
				r.Model = fmt.Sprintf("model-%d-%d", k, time.Now().UnixNano())
				k++
				if err := os.WriteFile(botFile(dir, id), filerecord.Encode(r), 0o600); err != nil {
					b.Fatal(err)
				}
				saved := time.Now()
				for {
					var c record.Change
					select {
					case c = <-changes:
					case <-time.After(5 * time.Second):
						b.Fatalf("no change for save %d", k)
					}
					if c.ID == id && c.Entry.Record.Model == r.Model {
						break
					}
				}
				took = append(took, time.Since(saved))
			}
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(took[min(len(took)-1, len(took)*99/100)].Microseconds())/1000, "p99-ms")
			b.ReportMetric(float64(took[len(took)-1].Microseconds())/1000, "max-ms")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkOpenWatching opens a store over 1,000, 10,000 (and 100,000)
// bots with and without watching, alternately in every iteration, and
// reports the ratio of their Open times (the goal is at most 1.5) and each
// in milliseconds; armed-ms is the time from the start of a watching Open
// until every bot folder is watched (the folders are watched in the
// background once Open returns), and close-ms the Close of a watching
// store (the goal is at most 1 s).
func BenchmarkOpenWatching(b *testing.B) {
	for _, n := range loadSizes() {
		b.Run(fmt.Sprintf("bots=%d", n), func(b *testing.B) {
			dir, _ := seeded(b, n)
			var plain, watching, armed, closing time.Duration
			for b.Loop() {
				t0 := time.Now()
				s, err := filerecord.Open(context.Background(), filerecord.Config{ConfigDir: dir})
				if err != nil {
					b.Fatal(err)
				}
				plain += time.Since(t0)
				s.Close()
				t1 := time.Now()
				s, err = filerecord.Open(context.Background(), filerecord.Config{ConfigDir: dir, Watch: true})
				if err != nil {
					b.Fatal(err)
				}
				watching += time.Since(t1)
				s.WaitWatched()
				armed += time.Since(t1)
				t2 := time.Now()
				s.Close()
				closing += time.Since(t2)
			}
			ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(b.N) }
			b.ReportMetric(float64(watching)/float64(plain), "x-unwatched")
			b.ReportMetric(ms(plain), "unwatched-ms")
			b.ReportMetric(ms(watching), "watching-ms")
			b.ReportMetric(ms(armed), "armed-ms")
			b.ReportMetric(ms(closing), "close-ms")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkIdleCPUWatching10000 measures the CPU time of the whole process
// over one idle second with a store watching 10,000 bots (every watch set),
// beside the same second with a store that does not watch.
func BenchmarkIdleCPUWatching10000(b *testing.B) {
	const n = 10000
	dir := b.TempDir()
	writeBots(b, dir, n)
	idle := func(watch bool) time.Duration {
		s, err := filerecord.Open(context.Background(), filerecord.Config{ConfigDir: dir, Watch: watch})
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		s.WaitWatched() // the watches set, the store is idle
		runtime.GC()
		c0 := cpuTime()
		time.Sleep(time.Second) // the idle second measured
		return cpuTime() - c0
	}
	var plain, watching time.Duration
	for b.Loop() {
		plain += idle(false)
		watching += idle(true)
	}
	b.ReportMetric(float64(plain.Microseconds())/1000/float64(b.N), "unwatched-cpu-ms/s")
	b.ReportMetric(float64(watching.Microseconds())/1000/float64(b.N), "watching-cpu-ms/s")
	b.ReportMetric(0, "ns/op")
}
