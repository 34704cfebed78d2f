package pgschema_test

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/agenthost/bots/internal/pgschema"
	"github.com/agenthost/bots/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func TestANewStepRunsOnceAndComponentsKeepTheirOwnVersions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pool := pgtest.Pool(t, pgtest.URL(t))
	one := []string{`CREATE TABLE a1 (x int)`}
	two := []string{one[0], `CREATE TABLE a2 (x int)`}
	for _, steps := range [][]string{one, one, two, two} {
		// A step run twice would fail: CREATE TABLE of a table that exists.
		if err := pgschema.Migrate(ctx, pool, "a", steps); err != nil {
			t.Fatalf("Migrate a to %d: %v", len(steps), err)
		}
	}
	if err := pgschema.Migrate(ctx, pool, "b", []string{`CREATE TABLE b1 (x int)`}); err != nil {
		t.Fatalf("Migrate b: %v", err)
	}
	var tables int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE schemaname = current_schema() AND tablename IN ('a1', 'a2', 'b1')`).Scan(&tables); err != nil {
		t.Fatal(err)
	}
	if tables != 3 {
		t.Fatalf("%d of the three tables made", tables)
	}
	err := pgschema.Migrate(ctx, pool, "a", one)
	if err == nil || !strings.Contains(err.Error(), "a schema is version 2, newer than this program's 1") {
		t.Fatalf("an older program on a newer schema: %v", err)
	}
}
