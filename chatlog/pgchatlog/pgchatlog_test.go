package pgchatlog_test

import (
	"context"
	"os"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agenthost/bots/chatlog"
	"github.com/agenthost/bots/chatlog/chatlogtest"
	"github.com/agenthost/bots/chatlog/pgchatlog"
	"github.com/agenthost/bots/internal/pgtest"
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
