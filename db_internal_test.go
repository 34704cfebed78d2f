package bots

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agenthost/bots/bot"
	"github.com/agenthost/bots/chatlog/memchatlog"
	"github.com/agenthost/bots/internal/waittest"
	"github.com/agenthost/bots/lease"
	"github.com/agenthost/bots/lease/memlease"
	"github.com/agenthost/bots/record/memrecord"
	"github.com/agenthost/bots/wake/agents"
	"github.com/agenthost/bots/wake/agents/memsessions"
	"github.com/agenthost/bots/wake/memrows"
)

// memDatabase is a Database in memory: what one Open answers, counting
// its closes and the leases pruned through it.
type memDatabase struct {
	shared *Shared
	closed int
	pruned atomic.Int64
}

// prunedLeases are leases counting what Prune removes.
type prunedLeases struct {
	lease.Leases
	pruned *atomic.Int64
}

func (l prunedLeases) Prune(ctx context.Context, grace time.Duration) (int, error) {
	n, err := l.Leases.Prune(ctx, grace)
	l.pruned.Add(int64(n))
	return n, err
}

func (d *memDatabase) Open(ctx context.Context, c DatabaseConfig) (*Shared, error) {
	return d.shared, nil
}

// newMemDatabase is a memDatabase keeping everything a Shared requires.
func newMemDatabase() *memDatabase {
	d := &memDatabase{}
	sessions := map[string]*memsessions.Store{}
	records := memrecord.New()
	d.shared = &Shared{
		Records: records, Logs: &memchatlog.Logs{}, Rows: &memrows.Rows{}, Leases: prunedLeases{&memlease.Leases{}, &d.pruned},
		Sessions: func(provider string) agents.SessionStore {
			if sessions[provider] == nil {
				sessions[provider] = &memsessions.Store{}
			}
			return sessions[provider]
		},
		Close: func() error { d.closed++; return records.Close() },
	}
	return d
}

func TestAServerOnADatabasePrunesTheLeasesThatEnded(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	base := t.TempDir()
	db := newMemDatabase()
	s := &Server{ConfigDir: filepath.Join(base, "config"), HostName: "test", Options: bot.Options{Root: filepath.Join(base, "bots")},
		Database: db, pruneEvery: 20 * time.Millisecond}
	t.Cleanup(func() { s.Close() })
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	ls := db.shared.Leases
	live, _, err := ls.Acquire(ctx, "live", "other", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ended, _, err := ls.Acquire(ctx, "turn s t1", "other", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := ls.Release(ctx, "turn s t1", "other", ended.Token); err != nil {
		t.Fatal(err)
	}
	waittest.For(t, "the released lease to be pruned", func() bool { return db.pruned.Load() != 0 })
	if got := db.pruned.Load(); got != 1 {
		t.Errorf("the server pruned %d leases, want the one released", got)
	}
	if err := ls.Renew(ctx, "live", "other", live.Token, time.Hour); err != nil {
		t.Fatalf("the live lease was pruned: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if db.closed != 1 {
		t.Errorf("the database was closed %d times, want once", db.closed)
	}
}

func TestAServerRefusesADatabaseThatAnswersTooLittleInOneSentenceAndClosesIt(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	db := newMemDatabase()
	db.shared.Logs = nil
	s := &Server{ConfigDir: filepath.Join(base, "config"), HostName: "test", Options: bot.Options{Root: filepath.Join(base, "bots")}, Database: db}
	defer s.Close()
	err := s.Start(t.Context())
	if err == nil || !strings.Contains(err.Error(), "each is required") {
		t.Fatalf("a database with no logs: %v, want a refusal naming what is required", err)
	}
	if db.closed != 1 {
		t.Errorf("the database was closed %d times after the refusal, want once", db.closed)
	}
}

func TestAServerOnADatabaseRefusesARootUnderItsConfigurationFolderBeforeOpeningIt(t *testing.T) {
	t.Parallel()
	config := filepath.Join(t.TempDir(), "config")
	opened := false
	s := &Server{ConfigDir: config, HostName: "test", Options: bot.Options{Root: filepath.Join(config, "bots")},
		Database: databaseFunc(func(context.Context, DatabaseConfig) (*Shared, error) {
			opened = true
			return nil, errors.New("opened")
		})}
	defer s.Close()
	err := s.Start(t.Context())
	if err == nil || !strings.Contains(err.Error(), "is the configuration folder or under it") {
		t.Fatalf("a root under the configuration folder: %v, want it refused", err)
	}
	if opened {
		t.Error("the database was opened for a root refused")
	}
}

// databaseFunc is a Database that is a function.
type databaseFunc func(context.Context, DatabaseConfig) (*Shared, error)

func (f databaseFunc) Open(ctx context.Context, c DatabaseConfig) (*Shared, error) { return f(ctx, c) }
