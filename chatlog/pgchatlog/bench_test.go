package pgchatlog_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/agenthost/bots/chatlog"
	"github.com/agenthost/bots/chatlog/pgchatlog"
	"github.com/agenthost/bots/internal/pgtest"
)

// BenchmarkAppend appends a chat line, synced (a line that begins or
// ends a turn) and not (a streamed part), beside its floor: a bare INSERT
// of the same text into a table of the same shape, committed. The three
// alternate, one of each per iteration; medians and their ratios are
// reported.
func BenchmarkAppend(b *testing.B) {
	ctx := context.Background()
	pool := pgtest.Pool(b, pgtest.URL(b))
	logs, err := pgchatlog.Open(ctx, pool)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `CREATE TABLE floor_lines (log bigint NOT NULL, n bigint GENERATED ALWAYS AS IDENTITY, line text NOT NULL, PRIMARY KEY (log, n))`); err != nil {
		b.Fatal(err)
	}
	key := chatlog.Key{Kind: chatlog.Chat, Bot: "motion", Session: "ahp-session:/bench"}
	line := []byte(`{"kind":"chat","at":"2026-12-01T21:00:00.000Z","action":{"type":"chat/responsePart","turnId":"t1","part":{"kind":"markdown","id":"p1","content":"Motion heard: hello"}},"_meta":{"ahpd.bot":{"id":"motion"}}}`)
	if err := logs.Create(ctx, key, line); err != nil {
		b.Fatal(err)
	}
	var floor, synced, streamed []time.Duration
	timed := func(out *[]time.Duration, f func() error) {
		t0 := time.Now()
		if err := f(); err != nil {
			b.Fatal(err)
		}
		*out = append(*out, time.Since(t0))
	}
	for b.Loop() {
		timed(&floor, func() error {
			_, err := pool.Exec(ctx, `INSERT INTO floor_lines (log, line) VALUES (1, $1)`, string(line))
			return err
		})
		timed(&synced, func() error { return logs.Append(ctx, key, line, true) })
		timed(&streamed, func() error { return logs.Append(ctx, key, line, false) })
	}
	med := func(ds []time.Duration) float64 {
		slices.Sort(ds)
		return float64(ds[len(ds)/2].Microseconds())
	}
	f, s, a := med(floor), med(synced), med(streamed)
	b.ReportMetric(f, "floor-p50-µs")
	b.ReportMetric(s, "synced-p50-µs")
	b.ReportMetric(a, "streamed-p50-µs")
	b.ReportMetric(s/f, "x-floor-synced")
	b.ReportMetric(a/f, "x-floor-streamed")
}
