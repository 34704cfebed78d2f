package pgtest_test

import (
	"context"
	"flag"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/agenthost/bots/internal/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func TestEachTestGetsAnEmptySchemaOfItsOwn(t *testing.T) {
	ctx := context.Background()
	a, b := pgtest.URL(t), pgtest.URL(t)
	if a == b {
		t.Fatalf("two calls gave one URL %s", a)
	}
	ca, err := pgx.Connect(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	defer ca.Close(ctx)
	if _, err := ca.Exec(ctx, "CREATE TABLE t (x int)"); err != nil {
		t.Fatal(err)
	}
	cb, err := pgx.Connect(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	defer cb.Close(ctx)
	var n int
	if err := cb.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("the second schema holds %d tables, want none", n)
	}
}

// fsyncSetting reads the cluster's fsync setting; BOTS_TEST_DATABASE_URL
// names a database whose settings are its own.
func fsyncSetting(tb testing.TB) string {
	tb.Helper()
	if os.Getenv(pgtest.EnvURL) != "" {
		tb.Skip("the database of " + pgtest.EnvURL + " keeps its own settings")
	}
	ctx := context.Background()
	c, err := pgx.Connect(ctx, pgtest.URL(tb))
	if err != nil {
		tb.Fatal(err)
	}
	defer c.Close(ctx)
	var fsync string
	if err := c.QueryRow(ctx, "SHOW fsync").Scan(&fsync); err != nil {
		tb.Fatal(err)
	}
	return fsync
}

func TestTheThrowawayClusterOfTestsDoesNotFsync(t *testing.T) {
	if f := flag.Lookup("test.bench"); f != nil && f.Value.String() != "" {
		t.Skip("benchmarks run in this binary: its cluster fsyncs for them")
	}
	if got := fsyncSetting(t); got != "off" {
		t.Fatalf("fsync is %s while tests run, want off", got)
	}
}

// BenchmarkTheThrowawayClusterOfBenchmarksFsyncs fails unless the
// benchmarks' cluster keeps what it acknowledged through a power loss, as
// docs/PERFORMANCE.md gives their figures.
func BenchmarkTheThrowawayClusterOfBenchmarksFsyncs(b *testing.B) {
	if got := fsyncSetting(b); got != "on" {
		b.Fatalf("fsync is %s while benchmarks run, want on", got)
	}
	for b.Loop() {
	}
}
