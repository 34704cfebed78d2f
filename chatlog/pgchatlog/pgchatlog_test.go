package pgchatlog_test

import (
	"context"
	"errors"
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

// stores opens logs on throwaway schemas.
var stores = pgtest.NewStores(func(ctx context.Context, pool *pgxpool.Pool) (chatlog.Logs, error) {
	return pgchatlog.Open(ctx, pool)
})

func TestConformance(t *testing.T) {
	t.Parallel()
	chatlogtest.Run(t, chatlogtest.Harness{Open: stores.Open, Reopen: stores.Reopen})
}

// fencedLog opens logs and leases on one throwaway database, and makes a
// back session's log (key, holding "1") under lease a, which holder "a"
// acquired: old is a context fenced with it.
func fencedLog(t *testing.T) (logs *pgchatlog.Logs, leases *pglease.Leases, a lease.Lease, old context.Context, key chatlog.Key) {
	t.Helper()
	ctx := t.Context()
	pool := pgtest.Pool(t, pgtest.URL(t))
	logs, err := pgchatlog.Open(ctx, pool)
	if err != nil {
		t.Fatal(err)
	}
	if leases, err = pglease.Open(ctx, pool); err != nil {
		t.Fatal(err)
	}
	key = chatlog.Key{Kind: chatlog.Back, Bot: "motion", Session: "ahp-session:/s"}
	if a, _, err = leases.Acquire(ctx, "motion/user:soft/work", "a", time.Minute); err != nil {
		t.Fatal(err)
	}
	old = lease.WithFence(ctx, lease.Fence{Key: a.Key, Token: a.Token})
	if err := logs.Create(old, key, []byte("1")); err != nil {
		t.Fatal(err)
	}
	return logs, leases, a, old, key
}

func TestAWriteWhoseLeaseWasTakenOverIsRefused(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	logs, leases, a, old, key := fencedLog(t)
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

func TestAWriteWhoseLeaseWasPrunedIsRefused(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	logs, leases, a, old, key := fencedLog(t)
	if err := leases.Release(ctx, a.Key, "a", a.Token); err != nil {
		t.Fatal(err)
	}
	if n, err := leases.Prune(ctx, lease.PruneGrace); err != nil || n != 1 {
		t.Fatalf("Prune = %d, %v; want the released lease", n, err)
	}
	// The row is gone: nothing holds the key, and the write of the
	// pruned lease's holder is refused all the same.
	if err := logs.Append(old, key, []byte("2"), true); !errors.Is(err, lease.ErrFenced) {
		t.Fatalf("an append with a pruned lease's token = %v, want ErrFenced", err)
	}
	b, ok, err := leases.Acquire(ctx, a.Key, "b", time.Minute)
	if err != nil || !ok || b.Token <= a.Token {
		t.Fatalf("the key taken again after the prune: %+v, %v, %v; want a token above %d", b, ok, err, a.Token)
	}
	if err := logs.Append(old, key, []byte("2"), true); !errors.Is(err, lease.ErrFenced) {
		t.Fatalf("an append with a pruned lease's token, the key held again = %v, want ErrFenced", err)
	}
	if err := logs.Append(lease.WithFence(ctx, lease.Fence{Key: b.Key, Token: b.Token}), key, []byte("3"), true); err != nil {
		t.Fatalf("an append by the new holder = %v", err)
	}
}

func TestSharedConformance(t *testing.T) {
	t.Parallel()
	chatlogtest.RunShared(t, chatlogtest.SharedHarness{Open: func(t *testing.T) (chatlog.Shared, chatlog.Shared) {
		url := pgtest.URL(t)
		return stores.On(t, url).(chatlog.Shared), stores.On(t, url).(chatlog.Shared)
	}})
}

func TestAFollowerWhoseConnectionDropsListensAgainAndSaysSo(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	pool := pgtest.Pool(t, url)
	logs, err := pgchatlog.Open(t.Context(), pool)
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan chatlog.Key, 100)
	fctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- logs.Follow(fctx, chatlog.Chat, func(k chatlog.Key, n int64) { got <- k }) }()
	defer func() { cancel(); <-done }()
	next := func() chatlog.Key {
		select {
		case k := <-got:
			return k
		case <-time.After(30 * time.Second):
			t.Fatal("the follower heard nothing")
			return chatlog.Key{}
		}
	}
	if k := next(); k != (chatlog.Key{}) {
		t.Fatalf("the follower first heard %v, want the zero key", k)
	}
	var channel string
	if err := pool.QueryRow(t.Context(), `SELECT 'bots_logs_' || left(md5(current_schema()), 16)`).Scan(&channel); err != nil {
		t.Fatal(err)
	}
	tag, err := pool.Exec(t.Context(), `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE 'LISTEN "' || $1 || '"'`, channel)
	if err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("terminate the listener: %v, %d rows", err, tag.RowsAffected())
	}
	if k := next(); k != (chatlog.Key{}) {
		t.Fatalf("after its connection dropped the follower heard %v, want the zero key", k)
	}
	k := chatlog.Key{Kind: chatlog.Chat, Bot: "motion", Session: "ahp-session:/after"}
	if err := logs.Create(t.Context(), k, []byte(`"open"`)); err != nil {
		t.Fatal(err)
	}
	if h := next(); h != k {
		t.Fatalf("after listening again the follower heard %v, want %v", h, k)
	}
}
