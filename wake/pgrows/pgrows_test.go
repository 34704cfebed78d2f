package pgrows_test

import (
	"context"
	"os"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agenthost/bots/internal/pgtest"
	"github.com/agenthost/bots/wake"
	"github.com/agenthost/bots/wake/pgrows"
	"github.com/agenthost/bots/wake/waketest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// open opens rows on a new pool to url, closed when t ends.
func open(t *testing.T, url string) wake.Rows {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	rows, err := pgrows.Open(context.Background(), pool)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func TestConformance(t *testing.T) {
	urls := map[wake.Rows]string{}
	waketest.RunRows(t, waketest.Rows{
		Open: func(t *testing.T) wake.Rows {
			url := pgtest.URL(t)
			rows := open(t, url)
			urls[rows] = url
			return rows
		},
		Reopen: func(t *testing.T, old wake.Rows) wake.Rows { return open(t, urls[old]) },
	})
}
