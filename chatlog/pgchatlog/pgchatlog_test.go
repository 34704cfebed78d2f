package pgchatlog_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agenthost/bots/chatlog"
	"github.com/agenthost/bots/chatlog/chatlogtest"
	"github.com/agenthost/bots/chatlog/pgchatlog"
	"github.com/agenthost/bots/internal/pgtest"
	"github.com/agenthost/bots/lease"
	"github.com/agenthost/bots/lease/pglease"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// open opens logs on a new pool to url, closed when t ends.
func open(t *testing.T, url string) chatlog.Logs {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	logs, err := pgchatlog.Open(context.Background(), pool)
	if err != nil {
		t.Fatal(err)
	}
	return logs
}

func TestConformance(t *testing.T) {
	urls := map[chatlog.Logs]string{}
	chatlogtest.Run(t, chatlogtest.Harness{
		Open: func(t *testing.T) chatlog.Logs {
			url := pgtest.URL(t)
			logs := open(t, url)
			urls[logs] = url
			return logs
		},
		Reopen: func(t *testing.T, old chatlog.Logs) chatlog.Logs { return open(t, urls[old]) },
	})
}

func TestAWriteWhoseLeaseWasTakenOverIsRefused(t *testing.T) {
	ctx := t.Context()
	url := pgtest.URL(t)
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	logs, err := pgchatlog.Open(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	leases, err := pglease.Open(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	key := chatlog.Key{Kind: chatlog.Back, Bot: "motion", Session: "ahp-session:/s"}
	a, _, err := leases.Acquire(ctx, "motion/user:soft/work", "a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	old := lease.WithFence(ctx, lease.Fence{Key: a.Key, Token: a.Token})
	if err := logs.Create(old, key, []byte("1")); err != nil {
		t.Fatal(err)
	}
	if err := logs.Append(old, key, []byte("2"), true); err != nil {
		t.Fatal(err)
	}
	if err := leases.Release(ctx, a.Key, "a", a.Token); err != nil {
		t.Fatal(err)
	}
	b, ok, err := leases.Acquire(ctx, a.Key, "b", time.Minute)
	if err != nil || !ok {
		t.Fatalf("the takeover: %v, %v", ok, err)
	}
	if err := logs.Append(old, key, []byte("3"), true); !errors.Is(err, lease.ErrFenced) {
		t.Fatalf("an append by the old holder = %v, want ErrFenced", err)
	}
	if err := logs.Remove(old, key); !errors.Is(err, lease.ErrFenced) {
		t.Fatalf("a remove by the old holder = %v, want ErrFenced", err)
	}
	if err := logs.Create(old, chatlog.Key{Kind: chatlog.Back, Bot: "motion", Session: "ahp-session:/t"}, []byte("1")); !errors.Is(err, lease.ErrFenced) {
		t.Fatalf("a create by the old holder = %v, want ErrFenced", err)
	}
	if err := logs.Append(lease.WithFence(ctx, lease.Fence{Key: b.Key, Token: b.Token}), key, []byte("4"), true); err != nil {
		t.Fatalf("an append by the new holder = %v", err)
	}
	lines, _, err := logs.Read(ctx, key)
	if err != nil || len(lines) != 3 || string(lines[2]) != "4" {
		t.Fatalf("the log reads %q, %v; want 1, 2, 4", lines, err)
	}
	if err := logs.Append(old, chatlog.Key{Kind: chatlog.Back, Bot: "motion", Session: "ahp-session:/none"}, []byte("1"), true); !errors.Is(err, lease.ErrFenced) {
		t.Fatalf("a fenced append to no log = %v, want ErrFenced", err)
	}
}

func TestOfTwoAppendsAtOneCountExactlyOneGoesIn(t *testing.T) {
	url := pgtest.URL(t)
	a, b := open(t, url).(chatlog.Shared), open(t, url).(chatlog.Shared)
	k := chatlog.Key{Kind: chatlog.Chat, Bot: "motion", Session: "ahp-session:/s"}
	if err := a.Create(t.Context(), k, []byte(`"open"`)); err != nil {
		t.Fatal(err)
	}
	if err := a.AppendAt(t.Context(), k, 1, []byte(`"a"`), true); err != nil {
		t.Fatalf("an append at the log's count: %v", err)
	}
	if err := b.AppendAt(t.Context(), k, 1, []byte(`"b"`), true); !errors.Is(err, chatlog.ErrConflict) {
		t.Fatalf("an append at a count the log has passed answered %v, want ErrConflict", err)
	}
	lines, err := b.ReadAfter(t.Context(), k, 1)
	if err != nil || len(lines) != 1 || string(lines[0]) != `"a"` {
		t.Fatalf("ReadAfter(1) = %q, %v; want the line a", lines, err)
	}
	if err := b.AppendAt(t.Context(), k, 2, []byte(`"b"`), false); err != nil {
		t.Fatalf("an append at the count read: %v", err)
	}
	heads, err := a.Heads(t.Context(), chatlog.Chat)
	if err != nil || heads[k] != 3 {
		t.Fatalf("Heads = %v, %v; want the log at 3 lines", heads, err)
	}
	if err := a.AppendAt(t.Context(), chatlog.Key{Kind: chatlog.Chat, Bot: "motion", Session: "ahp-session:/none"}, 0, []byte(`"x"`), true); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("an append at a count to no log answered %v, want fs.ErrNotExist", err)
	}
}

func TestFollowHearsEveryWriteOfAnotherPoolInOrder(t *testing.T) {
	url := pgtest.URL(t)
	a, b := open(t, url).(chatlog.Shared), open(t, url).(chatlog.Shared)
	type heard struct {
		k chatlog.Key
		n int64
	}
	got := make(chan heard, 100)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- a.Follow(ctx, chatlog.Chat, func(k chatlog.Key, n int64) { got <- heard{k, n} }) }()
	defer func() { cancel(); <-done }()
	k := chatlog.Key{Kind: chatlog.Chat, Bot: "motion", Session: "ahp-session:/s"}
	back := chatlog.Key{Kind: chatlog.Back, Bot: "motion", Session: "ahp-session:/b"}
	// The zero key says the follower listens.
	select {
	case h := <-got:
		if h.k != (chatlog.Key{}) {
			t.Fatalf("the follower first heard %v, want the zero key", h.k)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the follower did not begin to listen")
	}
	if err := b.Create(t.Context(), back, []byte(`"open"`)); err != nil { // another kind: not heard
		t.Fatal(err)
	}
	if err := b.Create(t.Context(), k, []byte(`"open"`)); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if err := b.Append(t.Context(), k, []byte(fmt.Sprintf(`"%d"`, i)), i%2 == 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Remove(t.Context(), k); err != nil {
		t.Fatal(err)
	}
	want := []int64{1, 2, 3, 4, 5, 6, 0}
	for _, n := range want {
		select {
		case h := <-got:
			if h.k != k || h.n != n {
				t.Fatalf("heard %v at %d, want %v at %d", h.k, h.n, k, n)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("the follower did not hear the log at %d lines", n)
		}
	}
}
