package bots

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/agenthost/bots/bot"
	"github.com/agenthost/bots/internal/pgtest"
	"github.com/agenthost/bots/lease"
	"github.com/agenthost/bots/lease/pglease"
)

func TestAServerOnADatabasePrunesTheLeasesThatEnded(t *testing.T) {
	ctx := t.Context()
	db, base := pgtest.URL(t), t.TempDir()
	s := &Server{ConfigDir: filepath.Join(base, "config"), HostName: "test", Options: bot.Options{Root: filepath.Join(base, "bots")},
		Database: db, pruneEvery: 20 * time.Millisecond}
	t.Cleanup(func() { s.Close() })
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	pool := pgtest.Pool(t, db)
	ls, err := pglease.Open(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
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
	rows := func() int {
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM bots_leases`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for deadline := time.Now().Add(10 * time.Second); rows() != 1; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the released lease's row is still there after 10 s: %d rows", rows())
		}
	}
	if ok, err := ls.Holds(ctx, lease.Fence{Key: "live", Token: live.Token}); err != nil || !ok {
		t.Fatalf("the live lease was pruned: %v, %v", ok, err)
	}
}
