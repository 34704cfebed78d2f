package pgsessions_test

import (
	"context"
	"os"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agenthost/bots/internal/pgtest"
	"github.com/agenthost/bots/wake/agents"
	"github.com/agenthost/bots/wake/agents/agentstest"
	"github.com/agenthost/bots/wake/agents/pgsessions"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// records opens the records on throwaway schemas.
var records = pgtest.NewStores(pgsessions.Open)

// claude opens the store of the claude provider, as a harness does.
var claude = pgtest.NewStores(func(ctx context.Context, pool *pgxpool.Pool) (agents.SessionStore, error) {
	recs, err := pgsessions.Open(ctx, pool)
	if err != nil {
		return nil, err
	}
	return recs.Store("claude"), nil
})

func TestConformance(t *testing.T) {
	t.Parallel()
	agentstest.RunSessionStore(t, agentstest.SessionStore{Open: claude.Open, Reopen: claude.Reopen})
}

func TestEachProviderKeepsRecordsOfItsOwn(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	a, b := records.On(t, url).Store("claude"), records.On(t, url).Store("codex")
	if err := a.Save(t.Context(), "motion/user:soft/work", agents.SessionRecord{ID: "s-1"}); err != nil {
		t.Fatal(err)
	}
	if r, ok, err := b.Load(t.Context(), "motion/user:soft/work"); err != nil || ok {
		t.Fatalf("another provider loads %+v, %v, %v", r, ok, err)
	}
	if r, ok, err := a.Load(t.Context(), "motion/user:soft/work"); err != nil || !ok || r.ID != "s-1" {
		t.Fatalf("the provider loads %+v, %v, %v", r, ok, err)
	}
}
