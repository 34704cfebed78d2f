package pgroute_test

import (
	"context"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agenthost/bots/internal/pgtest"
	"github.com/agenthost/bots/route"
	"github.com/agenthost/bots/route/memroute"
	"github.com/agenthost/bots/route/pgroute"
	"github.com/agenthost/bots/route/relay"
	"github.com/agenthost/bots/route/routetest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func open(t *testing.T, url string, conns []route.Connection) *pgroute.Store {
	t.Helper()
	s, err := pgroute.Open(t.Context(), pgtest.Pool(t, url), memroute.New(conns))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConformance(t *testing.T) {
	t.Parallel()
	routetest.Run(t, func(t *testing.T, conns []route.Connection) route.Store {
		return open(t, pgtest.URL(t), conns)
	})
}

func TestAWriteOnOneInstanceIsHeardAndReadOnAnother(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	a, b := open(t, url, routetest.Conns), open(t, url, routetest.Conns)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	ch, err := b.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r, err := a.PutRoute(ctx, route.Route{ID: "dm", Enabled: true, Connection: "libera", Bot: "motion", Scope: route.Scope{Kind: route.Direct, ID: "alice"}})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatal("the other instance heard nothing of the write")
	}
	got, err := b.Routes(ctx)
	if err != nil || len(got) != 1 || got[0].Version != r.Version || got[0].Scope.ID != "alice" {
		t.Errorf("the other instance reads %+v, %v", got, err)
	}
}

func TestMemoryConformance(t *testing.T) {
	t.Parallel()
	mems := pgtest.NewStores(func(ctx context.Context, pool *pgxpool.Pool) (relay.Memory, error) {
		return pgroute.OpenMemory(ctx, pool)
	})
	routetest.RunMemory(t, routetest.MemoryHarness{Open: mems.Open, Again: mems.Reopen})
}

func TestMemoryUpdatesOfOneKeyFromTwoInstancesTakeTurns(t *testing.T) {
	t.Parallel()
	url := pgtest.URL(t)
	a, err := pgroute.OpenMemory(t.Context(), pgtest.Pool(t, url))
	if err != nil {
		t.Fatal(err)
	}
	b, err := pgroute.OpenMemory(t.Context(), pgtest.Pool(t, url))
	if err != nil {
		t.Fatal(err)
	}
	if v, err := a.Get(t.Context(), "conn/x"); err != nil || v != nil {
		t.Fatalf("a new key reads %q, %v", v, err)
	}
	var wg sync.WaitGroup
	for i := range 20 {
		m := a
		if i%2 == 1 {
			m = b
		}
		wg.Go(func() {
			err := m.Update(t.Context(), "count", func(old []byte) ([]byte, error) {
				n, _ := strconv.Atoi(string(old))
				return []byte(strconv.Itoa(n + 1)), nil
			})
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if v, err := b.Get(t.Context(), "count"); err != nil || string(v) != "20" {
		t.Errorf("after 20 updates from two instances the key reads %q, %v", v, err)
	}
}
