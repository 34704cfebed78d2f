package pglease_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agenthost/bots/internal/pgschema"
	"github.com/agenthost/bots/internal/pgtest"
	"github.com/agenthost/bots/lease"
	"github.com/agenthost/bots/lease/leasetest"
	"github.com/agenthost/bots/lease/pglease"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// stores opens leases on throwaway schemas.
var stores = pgtest.NewStores(func(ctx context.Context, pool *pgxpool.Pool) (lease.Leases, error) {
	return pglease.Open(ctx, pool)
})

func TestConformance(t *testing.T) {
	t.Parallel()
	// Again: another pool on the same schema, a second instance.
	leasetest.Run(t, leasetest.Harness{Open: stores.Open, Again: stores.Reopen, Holds: holds})
}

// holds checks f as a fenced write does: pglease.FenceSQL.
func holds(t *testing.T, ls lease.Leases, f lease.Fence) bool {
	t.Helper()
	ok, err := ls.(*pglease.Leases).Holds(t.Context(), f)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// version1 is the schema's first version, as a database made before
// tokens came from a sequence holds it.
const version1 = `
CREATE TABLE bots_leases (
	key text COLLATE "C" PRIMARY KEY,
	holder text NOT NULL,
	token bigint NOT NULL,
	expires_at timestamptz NOT NULL
);
`

func TestMigratingKeepsTheTokensHeldAndStartsTheSequenceAboveThem(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	url := pgtest.URL(t)
	pool := pgtest.Pool(t, url)
	if err := pgschema.Migrate(ctx, pool, "lease", []string{version1}); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO bots_leases VALUES
		('held', 'a', 41, clock_timestamp() + interval '1 hour'),
		('released', 'a', 7, '-infinity')`); err != nil {
		t.Fatal(err)
	}
	ls, err := pglease.Open(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	if !holds(t, ls, lease.Fence{Key: "held", Token: 41}) {
		t.Fatal("a write fenced with a lease held before the migration is refused")
	}
	if err := ls.Renew(ctx, "held", "a", 41, time.Minute); err != nil {
		t.Fatalf("the renewal of a lease held before the migration: %v", err)
	}
	for _, key := range []string{"released", "new"} {
		l, ok, err := ls.Acquire(ctx, key, "b", time.Minute)
		if err != nil || !ok {
			t.Fatalf("Acquire %s: %v, %v", key, ok, err)
		}
		if l.Token <= 41 {
			t.Errorf("%s acquired after the migration got token %d, not above every token before (41)", key, l.Token)
		}
	}
}

func TestRowsOfEndedLeasesDoNotPileUp(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	pool := pgtest.Pool(t, pgtest.URL(t))
	ls, err := pglease.Open(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	live, _, err := ls.Acquire(ctx, "live", "a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 100 {
		key := fmt.Sprintf("turn s %d", i)
		l, ok, err := ls.Acquire(ctx, key, "a", time.Minute)
		if err != nil || !ok {
			t.Fatalf("Acquire %s: %v, %v", key, ok, err)
		}
		if err := ls.Release(ctx, key, "a", l.Token); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := ls.Prune(ctx, lease.PruneGrace); err != nil || n != 100 {
		t.Fatalf("Prune = %d, %v; want the 100 released leases", n, err)
	}
	var rows int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM bots_leases`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != 1 || !holds(t, ls, lease.Fence{Key: "live", Token: live.Token}) {
		t.Fatalf("after the prune bots_leases holds %d rows, want the live lease's alone", rows)
	}
}
