package pglease_test

import (
	"context"
	"os"
	"testing"

	"github.com/agenthost/bots/internal/pgtest"
	"github.com/agenthost/bots/lease"
	"github.com/agenthost/bots/lease/leasetest"
	"github.com/agenthost/bots/lease/pglease"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// open opens leases on a new pool to url, closed when t ends.
func open(t *testing.T, url string) lease.Leases {
	t.Helper()
	pool := pgtest.Pool(t, url)
	ls, err := pglease.Open(context.Background(), pool)
	if err != nil {
		t.Fatal(err)
	}
	return ls
}

func TestConformance(t *testing.T) {
	urls := map[lease.Leases]string{}
	leasetest.Run(t, leasetest.Harness{
		Open: func(t *testing.T) lease.Leases {
			url := pgtest.URL(t)
			ls := open(t, url)
			urls[ls] = url
			return ls
		},
		// Another pool on the same schema: a second instance.
		Again: func(t *testing.T, old lease.Leases) lease.Leases {
			ls := open(t, urls[old])
			urls[ls] = urls[old]
			return ls
		},
	})
}
