package pgrecord_test

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agenthost/bots/internal/pgtest"
	"github.com/agenthost/bots/record/recordtest"
)

// The benchmarks time each operation beside its floor, one of each in
// turn, so that the noise of a shared machine falls on both alike, and
// report the medians and their ratio.

var seq atomic.Int64 // slugs no run of a benchmark has used

// pair times floor and op once each per iteration and reports their medians
// and op's ratio to floor.
func pair(b *testing.B, floor, op func() error) {
	var fs, os []time.Duration
	for b.Loop() {
		t0 := time.Now()
		if err := floor(); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if err := op(); err != nil {
			b.Fatal(err)
		}
		fs, os = append(fs, t1.Sub(t0)), append(os, time.Since(t1))
	}
	f, o := median(fs), median(os)
	b.ReportMetric(float64(f.Nanoseconds()), "floor-ns")
	b.ReportMetric(float64(o.Nanoseconds()), "store-ns")
	b.ReportMetric(float64(o)/float64(f), "x-floor")
}

func median(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// BenchmarkCreateDurable makes a bot, committed before Create returns,
// beside its floor: a bare INSERT … COMMIT of the same row (id, revision,
// record text) into a table of the same shape, on the same database.
func BenchmarkCreateDurable(b *testing.B) {
	ctx := context.Background()
	s := open(b, pgtest.URL(b))
	if _, err := s.Pool().Exec(ctx, `CREATE TABLE floor (id text COLLATE "C" PRIMARY KEY, rev bigint NOT NULL, record text NOT NULL)`); err != nil {
		b.Fatal(err)
	}
	pair(b, func() error {
		n := seq.Add(1)
		r := recordtest.Sample(fmt.Sprintf("bot-%d", n))
		_, err := s.Pool().Exec(ctx, `INSERT INTO floor (id, rev, record) VALUES ($1, $2, $3)`, r.ID, n, string(r.AppendJSON(nil)))
		return err
	}, func() error {
		_, err := s.Create(ctx, recordtest.Sample(fmt.Sprintf("bot-%d", seq.Add(1))))
		return err
	})
}

// BenchmarkGet reads one bot beside its floor: a bare SELECT of its row by
// key.
func BenchmarkGet(b *testing.B) {
	ctx := context.Background()
	s := open(b, pgtest.URL(b))
	if _, err := s.Create(ctx, recordtest.Sample("motion")); err != nil {
		b.Fatal(err)
	}
	var rev int64
	var text string
	pair(b, func() error {
		return s.Pool().QueryRow(ctx, `SELECT rev, record FROM bots WHERE id = $1`, "motion").Scan(&rev, &text)
	}, func() error {
		_, err := s.Get(ctx, "motion")
		return err
	})
}
