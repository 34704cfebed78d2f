package main

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/bots/ahp"
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
	b.ReportMetric(quantileMicros(same, 0.5), "same-p50-µs")
	b.ReportMetric(quantileMicros(same, 0.99), "same-p99-µs")
	b.ReportMetric(quantileMicros(cross, 0.5), "cross-p50-µs")
	b.ReportMetric(quantileMicros(cross, 0.99), "cross-p99-µs")
	b.ReportMetric(quantileMicros(cross, 0.5)/quantileMicros(same, 0.5), "x-same-p50")
}

// BenchmarkDBChatTurnMovingBetweenInstances times an echo chat turn whose
// back session last ran on the other of two instances on one database
// (the lease moves: released by one, taken by the other, the session read
// back from the database), beside its floor: the same turn right after one
// on the same instance. Each iteration is A, A, B, B: the first of each
// pair moves the back session, the second is a floor.
func BenchmarkDBChatTurnMovingBetweenInstances(b *testing.B) {
	clients := twoOnOneDatabase(b)
	clients[0].makeBot("motion", `{"name": "Motion"}`)
	var chats []string
	for i, c := range clients {
		chats = append(chats, c.openChat(fmt.Sprintf("ahp-session:/bench-%d", i), "motion"))
	}
	var same, moved []time.Duration
	n := 0
	turn := func(i int) time.Duration {
		n++
		id := fmt.Sprint("t", n)
		t0 := time.Now()
		clients[i].dispatch(chats[i], ahp.TurnStarted(id, t0, ahp.UserMessage("hi")))
		clients[i].waitChatFor(chats[i], "turn "+id, time.Minute, func(s ahp.ChatState) bool {
			return s.ActiveTurn == nil && len(s.Turns) > 0 && s.Turns[len(s.Turns)-1].ID == id
		})
		return time.Since(t0)
	}
	turn(0) // the back session starts
	for b.Loop() {
		for _, i := range []int{0, 1} {
			d := turn(i)
			if n > 2 || i == 1 { // the first turn on A after the start moves nothing
				moved = append(moved, d)
			}
			same = append(same, turn(i))
		}
	}
	slices.Sort(same)
	slices.Sort(moved)
	b.ReportMetric(quantileMicros(same, 0.5), "same-p50-µs")
	b.ReportMetric(quantileMicros(moved, 0.5), "moved-p50-µs")
	b.ReportMetric(quantileMicros(moved, 0.99), "moved-p99-µs")
	b.ReportMetric(quantileMicros(moved, 0.5)/quantileMicros(same, 0.5), "x-same-p50")
}

// BenchmarkDBChatFollowedOnAnotherInstance times an echo chat turn on
// instance A as a client subscribed to the chat on B sees it (B follows
// the chat's log), beside its floor: the same turn as a client on A, the
// instance that runs it, sees it end.
func BenchmarkDBChatFollowedOnAnotherInstance(b *testing.B) {
	a, o, chat := chatOnTwo(b, "ahp-session:/bench-follow")
	var here, there []time.Duration
	n := 0
	for b.Loop() {
		n++
		id := fmt.Sprint("t", n)
		ended := func(s ahp.ChatState) bool {
			return s.ActiveTurn == nil && len(s.Turns) > 0 && s.Turns[len(s.Turns)-1].ID == id
		}
		t0 := time.Now()
		a.dispatch(chat, ahp.TurnStarted(id, t0, ahp.UserMessage("hi")))
		var wg sync.WaitGroup
		var dA, dB time.Duration
		wg.Go(func() { a.waitChatFor(chat, "turn "+id, time.Minute, ended); dA = time.Since(t0) })
		wg.Go(func() { o.waitChatFor(chat, "turn "+id, time.Minute, ended); dB = time.Since(t0) })
		wg.Wait()
		here, there = append(here, dA), append(there, dB)
	}
	reportHereThere(b, here, there)
}

// reportHereThere reports the times a client on the instance that runs a
// turn (here) and one on another instance (there) saw it end: their
// medians, there's p99, and there's median against here's.
func reportHereThere(b *testing.B, here, there []time.Duration) {
	slices.Sort(here)
	slices.Sort(there)
	b.ReportMetric(quantileMicros(here, 0.5), "here-p50-µs")
	b.ReportMetric(quantileMicros(there, 0.5), "there-p50-µs")
	b.ReportMetric(quantileMicros(there, 0.99), "there-p99-µs")
	b.ReportMetric(quantileMicros(there, 0.5)/quantileMicros(here, 0.5), "x-here-p50")
}

// quantileMicros is the p-quantile (0 to 1) of ds, sorted, in microseconds.
func quantileMicros(ds []time.Duration, p float64) float64 {
	return float64(ds[int(p*float64(len(ds)-1))].Microseconds())
}

// twoOnOneDatabase starts two in-process servers on one throwaway
// database and one root, and returns a client of each.
func twoOnOneDatabase(b *testing.B) []*ahpClient {
	db, base := pgtest.URL(b), b.TempDir()
	var clients []*ahpClient
	for i := range 2 {
		s := startServer(b, []string{"-addr", "127.0.0.1:0", "-db", db, "-log-level", "error", "-host-name", "chathost",
			"-config", filepath.Join(base, fmt.Sprintf("config-%d", i)), "-root", filepath.Join(base, "bots")})
		clients = append(clients, dialChat(b, s.addr, fmt.Sprintf("bench-%d", i)))
	}
	return clients
}

// chatOnTwo starts two servers on one database (twoOnOneDatabase); a, the
// first one's client, makes bot motion and opens session with it, and
// both clients follow the chat, whose URI it returns.
func chatOnTwo(b *testing.B, session string) (a, o *ahpClient, chat string) {
	clients := twoOnOneDatabase(b)
	a, o = clients[0], clients[1]
	a.makeBot("motion", `{"name": "Motion"}`)
	a.must("createSession", map[string]any{"channel": session, "provider": "bot-chat", "config": map[string]any{"bot": "motion"}}, nil)
	chat = a.follow(session)
	o.follow(session)
	return a, o, chat
}
