package bot_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/agenthost/bots/bot"
	"github.com/agenthost/bots/internal/atomicfile"
	"github.com/agenthost/bots/internal/frontmatter"
	"github.com/agenthost/bots/record"
	"github.com/agenthost/bots/record/memrecord"
)

// BenchmarkReadBot compares a read of one bot, whose persona is in its
// AGENTS.md, with the floor of reading that file and splitting its
// frontmatter. Goal: read ≤ 2× floor.
func BenchmarkReadBot(b *testing.B) {
	base := b.TempDir()
	svc, err := bot.New(b.Context(), bot.Config{
		Store: memrecord.New(), ConfigDir: filepath.Join(base, "config"), HostName: "h",
		Options: bot.Options{Root: filepath.Join(base, "bots")}, PersonaIn: bot.PersonaInFiles,
	})
	if err != nil {
		b.Fatal(err)
	}
	defer svc.Close()
	made, err := svc.Make(b.Context(), soft, "motion", []byte(`{"name":"Motion","description":"Reads pull requests.","instructions":"You review pull requests. Say what would break, in one paragraph."}`))
	if err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(made.Record.Workspace, "AGENTS.md")
	b.Run("floor", func(b *testing.B) {
		for b.Loop() {
			data, err := os.ReadFile(path)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := frontmatter.Split(data); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("read", func(b *testing.B) {
		for b.Loop() {
			if _, err := svc.Read(b.Context(), soft, "motion"); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkList10000AsTeamMember lists 10,000 bots, a tenth of them the
// reader's team's, against the floor of one pass over 10,000 in-memory
// records. Goal: list ≤ 5× floor.
func BenchmarkList10000AsTeamMember(b *testing.B) {
	const n = 10000
	svc, recs := teamService(b, n)
	b.Run("floor", func(b *testing.B) {
		for b.Loop() {
			var out []record.Record
			for _, r := range recs {
				if bot.CanRead(mate, r) {
					out = append(out, r)
				}
			}
			if len(out) != n/10 {
				b.Fatalf("%d bots", len(out))
			}
		}
	})
	b.Run("list", func(b *testing.B) {
		for b.Loop() {
			list, err := svc.List(b.Context(), mate)
			if err != nil {
				b.Fatal(err)
			}
			if len(list) != n/10 {
				b.Fatalf("%d bots", len(list))
			}
		}
	})
}

// BenchmarkMakeDurable compares a make on the file store (bot.md, the work
// folder, AGENTS.md and CLAUDE.md, each written crash-safe) with the floor
// of writing and fsyncing the same files. Goal: make ≤ 3× floor.
func BenchmarkMakeDurable(b *testing.B) {
	base := b.TempDir()
	svc, store, err := openFileService(base)
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	defer svc.Close()
	made, err := svc.Make(b.Context(), soft, "sample", []byte(`{"name":"Motion","instructions":"Review."}`))
	if err != nil {
		b.Fatal(err)
	}
	botMD, err := os.ReadFile(filepath.Join(base, "config", "bots", "sample", "bot.md"))
	if err != nil {
		b.Fatal(err)
	}
	agentsMD, err := os.ReadFile(filepath.Join(made.Record.Workspace, "AGENTS.md"))
	if err != nil {
		b.Fatal(err)
	}
	floorDir := filepath.Join(base, "floor")
	i := 0 // names stay fresh across the runs of -count
	b.Run("floor", func(b *testing.B) {
		for b.Loop() {
			i++
			cfg := filepath.Join(floorDir, "config", fmt.Sprint(i))
			work := filepath.Join(floorDir, "work", fmt.Sprint(i))
			for _, f := range []struct {
				dir, name string
				data      []byte
			}{{cfg, "bot.md", botMD}, {work, "AGENTS.md", agentsMD}, {work, "CLAUDE.md", []byte("@AGENTS.md\n")}} {
				if err := atomicfile.MkdirAll(f.dir, 0o755); err != nil {
					b.Fatal(err)
				}
				if err := atomicfile.Write(filepath.Join(f.dir, f.name), f.data, 0o644); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("make", func(b *testing.B) {
		for b.Loop() {
			i++
			if _, err := svc.Make(b.Context(), soft, fmt.Sprintf("bot-%d", i), []byte(`{"name":"Motion","instructions":"Review."}`)); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// teamService starts a service over a memory store of n bots, every tenth
// of them owned by team:backend (mate's team), and returns it and the
// records; the test's cleanup closes both.
func teamService(b *testing.B, n int) (*bot.Service, []record.Record) {
	store := memrecord.New()
	b.Cleanup(func() { store.Close() })
	recs := make([]record.Record, n)
	for i := range n {
		owner := "user:someone"
		if i%10 == 0 {
			owner = "team:backend"
		}
		recs[i] = record.Record{ID: fmt.Sprintf("bot-%06d", i), Name: "Bot", Owner: owner, Body: "robot", Color: "red", Session: "work"}
		if _, err := store.Create(b.Context(), recs[i]); err != nil {
			b.Fatal(err)
		}
	}
	base := b.TempDir()
	svc, err := bot.New(b.Context(), bot.Config{
		Store: store, ConfigDir: filepath.Join(base, "config"), HostName: "h",
		Options: bot.Options{Root: filepath.Join(base, "bots")},
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { svc.Close() })
	return svc, recs
}
