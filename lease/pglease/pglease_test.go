package pglease_test

import (
	"context"
	"os"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agenthost/bots/internal/pgtest"
	"github.com/agenthost/bots/lease"
	"github.com/agenthost/bots/lease/leasetest"
	"github.com/agenthost/bots/lease/pglease"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// stores opens leases on throwaway schemas.
var stores = pgtest.NewStores(func(ctx context.Context, pool *pgxpool.Pool) (lease.Leases, error) {
	return pglease.Open(ctx, pool)
})

func TestConformance(t *testing.T) {
	// Again: another pool on the same schema, a second instance.
	leasetest.Run(t, leasetest.Harness{Open: stores.Open, Again: stores.Reopen})
}
