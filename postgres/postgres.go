// Package postgres keeps in PostgreSQL what several bots.Servers share to
// be one set of bots: the records (pgrecord), the chat logs (pgchatlog),
// the back sessions' rows (pgrows), the agents' ACP session records
// (pgsessions), the leases (pglease) and the routes with what the relay
// remembers (pgroute), all on the records' pool. It is the one importer
// of them the embedding value needs, so that an embedder that keeps its
// bots in files links no database driver:
//
//	srv := &bots.Server{ConfigDir: dir, Database: postgres.Database{URL: url}}
package postgres

import (
	"context"
	"fmt"

	"github.com/agenthost/bots"
	"github.com/agenthost/bots/chatlog/pgchatlog"
	"github.com/agenthost/bots/lease/pglease"
	"github.com/agenthost/bots/record/pgrecord"
	"github.com/agenthost/bots/route"
	"github.com/agenthost/bots/route/pgroute"
	"github.com/agenthost/bots/route/relay"
	"github.com/agenthost/bots/wake/agents/pgsessions"
	"github.com/agenthost/bots/wake/pgrows"
)

// Database is the PostgreSQL database at URL, as a bots.Server's
// Database.
type Database struct {
	// URL is a PostgreSQL connection URL or keyword string, as pgx
	// parses it (postgres://user:password@host/name).
	URL string
}

var _ bots.Database = Database{}

// Open opens the records' store of d.URL, creating or migrating the
// tables of what the instances share on its pool, after checking that
// c.Root is the folder every instance on the database shares
// (pgrecord.ClaimRoot): a node whose shared folder is not there refuses to
// start rather than make bot folders the others cannot see.
func (d Database) Open(ctx context.Context, c bots.DatabaseConfig) (*bots.Shared, error) {
	store, err := pgrecord.Open(ctx, pgrecord.Config{URL: d.URL, Logger: c.Logger, Telemetry: c.Telemetry})
	if err != nil {
		return nil, fmt.Errorf("bots: database: %w", err)
	}
	shared, err := open(ctx, store, c)
	if err != nil {
		store.Close()
		return nil, err
	}
	return shared, nil
}

// open is Open on the opened store.
func open(ctx context.Context, store *pgrecord.Store, c bots.DatabaseConfig) (*bots.Shared, error) {
	if err := store.ClaimRoot(ctx, c.Root); err != nil {
		return nil, fmt.Errorf("bots: database: refusing to start: %w", err)
	}
	pool := store.Pool()
	logs, err := pgchatlog.Open(ctx, pool)
	if err != nil {
		return nil, fmt.Errorf("bots: database: %w", err)
	}
	logs.Measure(c.Telemetry)
	rows, err := pgrows.Open(ctx, pool)
	if err != nil {
		return nil, fmt.Errorf("bots: database: %w", err)
	}
	sessions, err := pgsessions.Open(ctx, pool)
	if err != nil {
		return nil, fmt.Errorf("bots: database: %w", err)
	}
	leases, err := pglease.Open(ctx, pool)
	if err != nil {
		return nil, fmt.Errorf("bots: database: %w", err)
	}
	return &bots.Shared{
		Records:  store,
		Logs:     logs,
		Rows:     rows,
		Leases:   leases,
		Sessions: sessions.Store,
		Routes: func(ctx context.Context, conns route.Store) (route.Store, error) {
			return pgroute.Open(ctx, pool, conns)
		},
		RouteMemory: func(ctx context.Context) (relay.Memory, error) {
			return pgroute.OpenMemory(ctx, pool)
		},
		Close: store.Close,
	}, nil
}
