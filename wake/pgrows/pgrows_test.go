package pgrows_test

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/agenthost/bots/internal/pgtest"
	"github.com/agenthost/bots/lease"
	"github.com/agenthost/bots/lease/pglease"
	"github.com/agenthost/bots/wake"
	"github.com/agenthost/bots/wake/pgrows"
	"github.com/agenthost/bots/wake/waketest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// open opens rows on a new pool to url, closed when t ends.
func open(t *testing.T, url string) wake.Rows {
	t.Helper()
	pool := pgtest.Pool(t, url)
	rows, err := pgrows.Open(context.Background(), pool)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func TestConformance(t *testing.T) {
	urls := map[wake.Rows]string{}
	waketest.RunRows(t, waketest.Rows{
		Open: func(t *testing.T) wake.Rows {
			url := pgtest.URL(t)
			rows := open(t, url)
			urls[rows] = url
			return rows
		},
		Reopen: func(t *testing.T, old wake.Rows) wake.Rows { return open(t, urls[old]) },
	})
}

func TestAPutWhoseLeaseWasTakenOverIsRefused(t *testing.T) {
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
