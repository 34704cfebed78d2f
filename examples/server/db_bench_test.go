package main

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/agenthost/bots/internal/pgtest"
)

// BenchmarkDBCataloguePropagation makes a bot on one of two instances on
// one database and times until a client subscribed to the catalogue of the
// other instance hears it, beside its floor: the same make heard by a
// client of the instance that made it. The two alternate, one of each per
// iteration; the medians, the p99s and the ratio of the medians are
// reported.
func BenchmarkDBCataloguePropagation(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	db, base := pgtest.URL(b), b.TempDir()
	users := filepath.Join(base, "users.json")
	writeAtomic(b, users, usersJSON("soft"))
	var servers []*testServer
	for i := range 2 {
		servers = append(servers, startServer(b, []string{"-addr", "127.0.0.1:0", "-db", db, "-users", users, "-log-level", "error",
			"-config", filepath.Join(base, fmt.Sprintf("config-%d", i)), "-root", filepath.Join(base, "bots")}))
	}
	var clients []*client
	for i, s := range servers {
		c := dial(ctx, b, s, rootToken, byQuery)
		c.initialize(b, fmt.Sprintf("bench-%d", i))
		c.subscribe(b, "x-ahpd-bots://", "bots")
		clients = append(clients, c)
	}
	maker := clients[0]
	var same, cross []time.Duration
	n := 0
	for b.Loop() {
		for _, hearer := range clients {
			n++
			slug := fmt.Sprintf("bot-%d", n)
			t0 := time.Now()
			maker.makeBot(b, slug, `{"name":"Bench"}`)
			hearer.waitFor(b, "bots: added "+slug)
			if hearer == maker {
				same = append(same, time.Since(t0))
			} else {
				cross = append(cross, time.Since(t0))
			}
		}
	}
	slices.Sort(same)
	slices.Sort(cross)
	q := func(ds []time.Duration, p float64) float64 {
		return float64(ds[int(p*float64(len(ds)-1))].Microseconds())
	}
	b.ReportMetric(q(same, 0.5), "same-p50-µs")
	b.ReportMetric(q(same, 0.99), "same-p99-µs")
	b.ReportMetric(q(cross, 0.5), "cross-p50-µs")
	b.ReportMetric(q(cross, 0.99), "cross-p99-µs")
	b.ReportMetric(q(cross, 0.5)/q(same, 0.5), "x-same-p50")
}
