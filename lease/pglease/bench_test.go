package pglease_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/agenthost/bots/internal/pgtest"
	"github.com/agenthost/bots/lease/pglease"
)

// BenchmarkAcquire times what a main turn does with its lease - a
// takeover (Acquire of a new key), a renewal (Acquire by its holder) and
// the Release - beside its floor: the same three with version 1's single
// statements (a token counted in the row), on a table of version 1's
// shape in the same schema. The two alternate, one of each per
// iteration, each on a key of its own; medians and their ratio are
// reported.
func BenchmarkAcquire(b *testing.B) {
	ctx := context.Background()
	pool := pgtest.Pool(b, pgtest.URL(b))
	ls, err := pglease.Open(ctx, pool)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `CREATE TABLE v1_leases (key text COLLATE "C" PRIMARY KEY, holder text NOT NULL, token bigint NOT NULL, expires_at timestamptz NOT NULL)`); err != nil {
		b.Fatal(err)
	}
	v1Acquire := func(key string) (int64, error) {
		var token int64
		err := pool.QueryRow(ctx, `INSERT INTO v1_leases AS l (key, holder, token, expires_at)
			VALUES ($1, $2, 1, clock_timestamp() + $3 * interval '1 microsecond')
			ON CONFLICT (key) DO UPDATE SET
				holder = excluded.holder,
				token = CASE WHEN l.holder = excluded.holder AND l.expires_at > clock_timestamp() THEN l.token ELSE l.token + 1 END,
				expires_at = excluded.expires_at
			WHERE l.expires_at <= clock_timestamp() OR l.holder = excluded.holder
			RETURNING token`, key, "a", time.Minute.Microseconds()).Scan(&token)
		return token, err
	}
	var floor, figure []time.Duration
	timed := func(out *[]time.Duration, f func() error) {
		t0 := time.Now()
		if err := f(); err != nil {
			b.Fatal(err)
		}
		*out = append(*out, time.Since(t0))
	}
	n := 0
	for b.Loop() {
		n++
		key := fmt.Sprintf("turn ahp-session:/bench t%d", n)
		timed(&floor, func() error {
			if _, err := v1Acquire(key); err != nil {
				return err
			}
			token, err := v1Acquire(key)
			if err != nil {
				return err
			}
			_, err = pool.Exec(ctx, `UPDATE v1_leases SET expires_at = '-infinity' WHERE key = $1 AND holder = $2 AND token = $3`, key, "a", token)
			return err
		})
		timed(&figure, func() error {
			if _, _, err := ls.Acquire(ctx, key, "a", time.Minute); err != nil {
				return err
			}
			l, _, err := ls.Acquire(ctx, key, "a", time.Minute)
			if err != nil {
				return err
			}
			return ls.Release(ctx, key, "a", l.Token)
		})
	}
	med := func(ds []time.Duration) float64 {
		slices.Sort(ds)
		return float64(ds[len(ds)/2].Microseconds())
	}
	f, g := med(floor), med(figure)
	b.ReportMetric(f, "v1-p50-µs")
	b.ReportMetric(g, "p50-µs")
	b.ReportMetric(g/f, "x-v1")
}
