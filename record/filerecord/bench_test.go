package filerecord_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agenthost/bots/internal/waittest"
	"github.com/agenthost/bots/record"
	"github.com/agenthost/bots/record/filerecord"
)

// smallBot is a bot as the host writes it for a bot of this host: the
// spec's example, its persona in AGENTS.md.
func smallBot(id string) record.Record {
	at := time.Date(2026, 10, 11, 9, 0, 0, 0, time.UTC)
	return record.Record{
		ID: id, Labels: []string{"review", "ci"}, Body: "robot", Color: "teal",
		Provider: "claude", Model: "claude-sonnet-5", Session: "work",
		Workspace: "/srv/bots/" + id, Owner: "user:soft", CreatedAt: at, UpdatedAt: at,
	}
}

// writeBots writes n small bots' files under configDir directly and returns
// their paths.
func writeBots(tb testing.TB, configDir string, n int) []string {
	tb.Helper()
	paths := make([]string, n)
	for i := range n {
		id := fmt.Sprintf("bot-%05d", i)
		dir := filepath.Join(configDir, "bots", id)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			tb.Fatal(err)
		}
		paths[i] = filepath.Join(dir, "bot.md")
		if err := os.WriteFile(paths[i], filerecord.Encode(smallBot(id)), 0o600); err != nil {
			tb.Fatal(err)
		}
	}
	return paths
}

// TestMain removes the folders the benchmarks seeded.
func TestMain(m *testing.M) {
	waittest.Parallel(3) // its tests wait on the disk and the folder watch
	code := m.Run()
	for _, dir := range seedDirs {
		os.RemoveAll(dir)
	}
	os.Exit(code)
}

// loadSizes are the numbers of bots the scale benchmarks load: 1,000 and
// 10,000, and 100,000 with BOTS_LOAD_100K set (seeding them takes a minute
// and about 1 GB of disk).
func loadSizes() []int {
	if os.Getenv("BOTS_LOAD_100K") != "" {
		return []int{1000, 10000, 100000}
	}
	return []int{1000, 10000}
}

// seedDirs holds, per size, a folder seeded with that many bots, shared by
// the benchmarks of one run (seeding 100,000 bots takes a minute).
var seedDirs = map[int]string{}

// seeded returns a folder with n small bots written directly, made once
// per run and removed when the run ends (see TestMain).
func seeded(b *testing.B, n int) (dir string, paths []string) {
	b.Helper()
	dir, ok := seedDirs[n]
	if !ok {
		var err error
		if dir, err = os.MkdirTemp("", "filerecord-seed-*"); err != nil {
			b.Fatal(err)
		}
		seedDirs[n] = dir
		writeBots(b, dir, n)
	}
	paths = make([]string, n)
	for i := range n {
		paths[i] = filepath.Join(dir, "bots", fmt.Sprintf("bot-%05d", i), "bot.md")
	}
	return dir, paths
}

// BenchmarkLoad opens a store over 1,000, 10,000 (and 100,000) bots beside
// its floor: a plain os.ReadFile of the same files, one after another.
//
// paired alternates the two in every iteration and reports their ratio,
// which holds up on a machine shared with other work: x-floor when Open
// returns (the store serves), swept-x-floor when the background work the
// load started (the load cache's write, the sweep of temp files) is done
// too, and cpu-x-floor the ratio of CPU time (all threads) until Open
// returns, which a busy machine disturbs less than wall time. The load
// reads with several goroutines, which a busy machine runs at once in CPU
// time but not in wall time, so each iteration also times a parallel
// floor, the same files read by as many goroutines as the load uses
// (parallelReaders): x-pfloor and cpu-x-pfloor are the load against it. Each of its
// loads reads every file; cached is the same over a load cache that holds
// every file. heap reports the live heap the loaded store holds per bot.
func BenchmarkLoad(b *testing.B) {
	for _, n := range loadSizes() {
		b.Run(fmt.Sprintf("bots=%d", n), func(b *testing.B) {
			dir, paths := seeded(b, n)
			cfg := filerecord.Config{ConfigDir: dir}
			b.Run("paired", func(b *testing.B) {
				// Each load reads every file, as a first start does: the
				// cache the load before wrote is removed first.
				pairedLoad(b, paths, func() {
					if err := os.Remove(filepath.Join(dir, "bots.cache")); err != nil && !errors.Is(err, fs.ErrNotExist) {
						b.Fatal(err)
					}
				}, func() (*filerecord.Store, error) { return filerecord.Open(context.Background(), cfg) })
			})
			b.Run("cached", func(b *testing.B) {
				// Each load finds every file in the load cache, as a start
				// over bots unchanged since the last does: the clock its
				// load reads is an hour on, so no file is too recent to
				// keep, and a first load writes the cache.
				later := time.Now().Add(time.Hour)
				open := func() (*filerecord.Store, error) { return filerecord.OpenBeganAt(context.Background(), cfg, later) }
				s, err := open()
				if err != nil {
					b.Fatal(err)
				}
				s.WaitSwept()
				s.Close()
				pairedLoad(b, paths, func() {}, open)
			})
			b.Run("heap", func(b *testing.B) {
				for b.Loop() {
					var before, after runtime.MemStats
					runtime.GC()
					runtime.ReadMemStats(&before)
					s, err := filerecord.Open(context.Background(), filerecord.Config{ConfigDir: dir})
					if err != nil {
						b.Fatal(err)
					}
					s.WaitSwept()
					runtime.GC()
					runtime.ReadMemStats(&after)
					b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(n), "heapB/bot")
					b.ReportMetric(0, "ns/op")
					runtime.KeepAlive(s)
					s.Close()
				}
			})
		})
	}
}

// pairedLoad times open, after prepare, against the floor of reading
// paths with os.ReadFile, one after another and then in parallel,
// alternating in every iteration, and reports their ratios (see
// BenchmarkLoad).
func pairedLoad(b *testing.B, paths []string, prepare func(), open func() (*filerecord.Store, error)) {
	var floor, pfloor, opened, swept, floorCPU, pfloorCPU, openCPU time.Duration
	for b.Loop() {
		t0, c0 := time.Now(), cpuTime()
		for _, p := range paths {
			if _, err := os.ReadFile(p); err != nil {
				b.Fatal(err)
			}
		}
		t1, c1 := time.Now(), cpuTime()
		if err := readParallel(paths); err != nil {
			b.Fatal(err)
		}
		t2, c2 := time.Now(), cpuTime()
		floor += t1.Sub(t0)
		floorCPU += c1 - c0
		pfloor += t2.Sub(t1)
		pfloorCPU += c2 - c1
		prepare()
		t3, c3 := time.Now(), cpuTime()
		s, err := open()
		if err != nil {
			b.Fatal(err)
		}
		opened += time.Since(t3)
		openCPU += cpuTime() - c3
		s.WaitSwept()
		swept += time.Since(t3)
		s.Close()
	}
	b.ReportMetric(float64(opened)/float64(floor), "x-floor")
	b.ReportMetric(float64(swept)/float64(floor), "swept-x-floor")
	b.ReportMetric(float64(openCPU)/float64(floorCPU), "cpu-x-floor")
	b.ReportMetric(float64(opened)/float64(pfloor), "x-pfloor")
	b.ReportMetric(float64(openCPU)/float64(pfloorCPU), "cpu-x-pfloor")
	b.ReportMetric(float64(floor.Microseconds())/1000/float64(b.N), "floor-ms")
	b.ReportMetric(float64(pfloor.Microseconds())/1000/float64(b.N), "pfloor-ms")
	b.ReportMetric(float64(opened.Microseconds())/1000/float64(b.N), "open-ms")
	b.ReportMetric(0, "ns/op")
}

// parallelReaders is how many goroutines a load reads with: min(8,
// 2×GOMAXPROCS) in filerecord's load.go.
func parallelReaders() int { return min(8, 2*runtime.GOMAXPROCS(0)) }

// readParallel reads every path with os.ReadFile, spread over
// parallelReaders goroutines taking the next path in turn, as the load
// does.
func readParallel(paths []string) error {
	var next atomic.Int64
	errs := make([]error, parallelReaders())
	var wg sync.WaitGroup
	for r := range errs {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= len(paths) {
					return
				}
				if _, err := os.ReadFile(paths[i]); err != nil {
					errs[r] = err
					return
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// BenchmarkCreateDurable makes one bot per iteration, beside its floor:
// writing and fsyncing the same bytes to a temp file, renaming it into place
// and fsyncing the folder. A Create also makes the bot's folder (and fsyncs
// its parent), which the floor does not; Update is a write without that.
func BenchmarkCreateDurable(b *testing.B) {
	b.Run("floor=WriteSyncRename", func(b *testing.B) {
		dir := b.TempDir()
		i := 0
		for b.Loop() {
			id := fmt.Sprintf("bot-%07d", i)
			i++
			if err := durableWrite(dir, id+".md", filerecord.Encode(smallBot(id))); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Create", func(b *testing.B) {
		s, err := filerecord.Open(context.Background(), filerecord.Config{ConfigDir: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		i := 0
		for b.Loop() {
			if _, err := s.Create(context.Background(), smallBot(fmt.Sprintf("bot-%07d", i))); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
	b.Run("Update", func(b *testing.B) {
		s, err := filerecord.Open(context.Background(), filerecord.Config{ConfigDir: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		e, err := s.Create(context.Background(), smallBot("motion"))
		if err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if e, err = s.Update(context.Background(), e.Record, e.ETag); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkCreateDurablePaired alternates a Create and its floor in every
// iteration and reports their ratio, which holds up on a machine shared
// with other work.
func BenchmarkCreateDurablePaired(b *testing.B) {
	floorDir := b.TempDir()
	s, err := filerecord.Open(context.Background(), filerecord.Config{ConfigDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	var floor, create, floorCPU, createCPU time.Duration
	i := 0
	for b.Loop() {
		id := fmt.Sprintf("bot-%07d", i)
		i++
		t0, c0 := time.Now(), cpuTime()
		if err := durableWrite(floorDir, id+".md", filerecord.Encode(smallBot(id))); err != nil {
			b.Fatal(err)
		}
		t1, c1 := time.Now(), cpuTime()
		if _, err := s.Create(context.Background(), smallBot(id)); err != nil {
			b.Fatal(err)
		}
		create += time.Since(t1)
		createCPU += cpuTime() - c1
		floor += t1.Sub(t0)
		floorCPU += c1 - c0
	}
	b.ReportMetric(float64(create)/float64(floor), "x-floor")
	b.ReportMetric(float64(createCPU)/float64(floorCPU), "cpu-x-floor")
}

// durableWrite is the floor of a durable write: temp file, write, fsync,
// close, rename, folder fsync.
func durableWrite(dir, name string, data []byte) error {
	f, err := os.CreateTemp(dir, ".tmp-"+name+"-*")
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), filepath.Join(dir, name)); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
