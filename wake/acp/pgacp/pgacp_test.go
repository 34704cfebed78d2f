package pgacp_test

import (
	"context"
	"os"
	"testing"

	"github.com/agenthost/bots/internal/pgtest"
	"github.com/agenthost/bots/wake/acp"
	"github.com/agenthost/bots/wake/acp/acptest"
	"github.com/agenthost/bots/wake/acp/pgacp"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// open opens provider's store on a new pool to url, closed when t ends.
func open(t *testing.T, url, provider string) acp.Store {
	t.Helper()
	pool := pgtest.Pool(t, url)
	recs, err := pgacp.Open(context.Background(), pool)
	if err != nil {
		t.Fatal(err)
	}
	return recs.Store(provider)
}

func TestConformance(t *testing.T) {
	urls := map[acp.Store]string{}
	acptest.RunStore(t, acptest.Store{
		Open: func(t *testing.T) acp.Store {
			url := pgtest.URL(t)
			s := open(t, url, "claude")
			urls[s] = url
			return s
		},
		Reopen: func(t *testing.T, old acp.Store) acp.Store { return open(t, urls[old], "claude") },
	})
}

func TestEachProviderKeepsRecordsOfItsOwn(t *testing.T) {
	url := pgtest.URL(t)
	a, b := open(t, url, "claude"), open(t, url, "codex")
	if err := a.Save(t.Context(), "motion/user:soft/work", acp.Record{ID: "s-1"}); err != nil {
		t.Fatal(err)
	}
	if r, ok, err := b.Load(t.Context(), "motion/user:soft/work"); err != nil || ok {
		t.Fatalf("another provider loads %+v, %v, %v", r, ok, err)
	}
	if r, ok, err := a.Load(t.Context(), "motion/user:soft/work"); err != nil || !ok || r.ID != "s-1" {
		t.Fatalf("the provider loads %+v, %v, %v", r, ok, err)
	}
}
