package pgroute

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agenthost/bots/internal/pgschema"
)

var memoryMigrations = []string{`
CREATE TABLE bots_route_memory (
	key text COLLATE "C" PRIMARY KEY,
	value bytea NOT NULL
);
`}

// Memory keeps what the relay remembers (route/relay's Memory) in
// bots_route_memory, one row a key, so that every instance on the
// database knows the chats, the messages passed on and the pairings: an
// instance that takes a connection over answers nothing twice, and a code
// given by one instance is paired on another's page.
type Memory struct {
	pool *pgxpool.Pool
}

// OpenMemory migrates bots_route_memory and returns the memory kept
// there. The pool stays the caller's.
func OpenMemory(ctx context.Context, pool *pgxpool.Pool) (*Memory, error) {
	if pool == nil {
		return nil, errors.New("pgroute: no pool")
	}
	if err := pgschema.Migrate(ctx, pool, "route-memory", memoryMigrations); err != nil {
		return nil, fmt.Errorf("pgroute: %w", err)
	}
	return &Memory{pool: pool}, nil
}

// Get returns the value of key, nil when there is none.
func (m *Memory) Get(ctx context.Context, key string) ([]byte, error) {
	var v []byte
	err := m.pool.QueryRow(ctx, `SELECT value FROM bots_route_memory WHERE key = $1`, key).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cannot read the relay's memory of %s: %w", key, err)
	}
	return v, nil
}

// Update replaces the value of key in a transaction that locks its row,
// made first when there is none, so that instances updating one key take
// turns.
func (m *Memory) Update(ctx context.Context, key string, f func(old []byte) ([]byte, error)) error {
	return pgx.BeginFunc(ctx, m.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO bots_route_memory (key, value) VALUES ($1, '') ON CONFLICT (key) DO NOTHING`, key); err != nil {
			return fmt.Errorf("cannot keep the relay's memory of %s: %w", key, err)
		}
		var old []byte
		if err := tx.QueryRow(ctx, `SELECT value FROM bots_route_memory WHERE key = $1 FOR UPDATE`, key).Scan(&old); err != nil {
			return fmt.Errorf("cannot read the relay's memory of %s: %w", key, err)
		}
		if len(old) == 0 {
			old = nil // the row just made
		}
		v, err := f(old)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE bots_route_memory SET value = $2 WHERE key = $1`, key, v); err != nil {
			return fmt.Errorf("cannot keep the relay's memory of %s: %w", key, err)
		}
		return nil
	})
}
