package pgrows_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agenthost/bots/internal/pgtest"
	"github.com/agenthost/bots/lease"
	"github.com/agenthost/bots/lease/pglease"
	"github.com/agenthost/bots/wake"
	"github.com/agenthost/bots/wake/pgrows"
	"github.com/agenthost/bots/wake/waketest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// stores opens rows on throwaway schemas.
var stores = pgtest.NewStores(func(ctx context.Context, pool *pgxpool.Pool) (wake.Rows, error) {
	return pgrows.Open(ctx, pool)
})

func TestConformance(t *testing.T) {
	t.Parallel()
	waketest.RunRows(t, waketest.Rows{Open: stores.Open, Reopen: stores.Reopen})
}

func TestAPutWhoseLeaseWasTakenOverIsRefused(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := pgtest.Pool(t, pgtest.URL(t))
	rows, err := pgrows.Open(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	leases, err := pglease.Open(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	a, _, err := leases.Acquire(ctx, "motion/user:soft/work", "a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	old := lease.WithFence(ctx, lease.Fence{Key: a.Key, Token: a.Token})
	row := wake.Row{Bot: "motion", Person: "user:soft", Name: "work", Session: "ahp-session:/a", UpdatedAt: time.Now()}
	if err := rows.Put(old, row); err != nil {
		t.Fatal(err)
	}
	if err := leases.Release(ctx, a.Key, "a", a.Token); err != nil {
		t.Fatal(err)
	}
	b, ok, err := leases.Acquire(ctx, a.Key, "b", time.Minute)
	if err != nil || !ok {
		t.Fatalf("the takeover: %v, %v", ok, err)
	}
	row.Session = "ahp-session:/stale"
	if err := rows.Put(old, row); !errors.Is(err, lease.ErrFenced) {
		t.Fatalf("a Put by the old holder = %v, want ErrFenced", err)
	}
	row.Session = "ahp-session:/b"
	if err := rows.Put(lease.WithFence(ctx, lease.Fence{Key: b.Key, Token: b.Token}), row); err != nil {
		t.Fatalf("a Put by the new holder = %v", err)
	}
	if got, _, err := rows.Get(ctx, "motion", "user:soft", "work"); err != nil || got.Session != "ahp-session:/b" {
		t.Fatalf("the row names %s, %v; want the new holder's", got.Session, err)
	}
}
