package filerecord_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

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

// BenchmarkLoad10000 opens a store over 10,000 bots, beside its floor: a
// plain os.ReadFile of the same files, one after another.
func BenchmarkLoad10000(b *testing.B) {
	const n = 10000
	dir := b.TempDir()
	paths := writeBots(b, dir, n)
	b.Run("floor=ReadFile", func(b *testing.B) {
		for b.Loop() {
			for _, p := range paths {
				if _, err := os.ReadFile(p); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("Open", func(b *testing.B) {
		for b.Loop() {
			s, err := filerecord.Open(context.Background(), filerecord.Config{ConfigDir: dir})
			if err != nil {
				b.Fatal(err)
			}
			s.Close()
		}
	})
	// paired alternates the two in every iteration and reports their
	// ratio, which holds up on a machine shared with other work.
	// cpu-x-floor is the ratio of CPU time (all threads), which a busy
	// machine disturbs less than wall time.
	b.Run("paired", func(b *testing.B) {
		var floor, open, floorCPU, openCPU time.Duration
		for b.Loop() {
			t0, c0 := time.Now(), cpuTime()
			for _, p := range paths {
				if _, err := os.ReadFile(p); err != nil {
					b.Fatal(err)
				}
			}
			t1, c1 := time.Now(), cpuTime()
			s, err := filerecord.Open(context.Background(), filerecord.Config{ConfigDir: dir})
			if err != nil {
				b.Fatal(err)
			}
			open += time.Since(t1)
			openCPU += cpuTime() - c1
			floor += t1.Sub(t0)
			floorCPU += c1 - c0
			s.Close()
		}
		b.ReportMetric(float64(open)/float64(floor), "x-floor")
		b.ReportMetric(float64(openCPU)/float64(floorCPU), "cpu-x-floor")
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
			runtime.GC()
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "heapB/bot")
			runtime.KeepAlive(s)
			s.Close()
		}
	})
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
