// Package pgrows keeps the wake's back-session rows in PostgreSQL, one
// table row per (bot, person, session name), so that any instance on the
// database, or one started after a restart, finds which back session a
// name is on.
package pgrows

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agenthost/bots/internal/pgschema"
	"github.com/agenthost/bots/lease"
	"github.com/agenthost/bots/lease/pglease"
	"github.com/agenthost/bots/wake"
)

// migrations are the rows schema's versions (see pgschema.Migrate). The
// row is kept whole as JSON, so every field comes back as it was written.
var migrations = []string{`
CREATE TABLE bots_rows (
	bot text COLLATE "C" NOT NULL,
	person text COLLATE "C" NOT NULL,
	name text COLLATE "C" NOT NULL,
	row text NOT NULL,
	PRIMARY KEY (bot, person, name)
);
`}

// Rows is a wake.Rows in PostgreSQL. The zero value is not usable; call
// Open.
type Rows struct {
	pool *pgxpool.Pool
}

var _ wake.Rows = (*Rows)(nil)

// Open creates or migrates the rows table in the pool's schema and returns
// the rows kept there. The pool stays the caller's.
func Open(ctx context.Context, pool *pgxpool.Pool) (*Rows, error) {
	if pool == nil {
		return nil, errors.New("pgrows: no pool")
	}
	if err := pglease.Migrate(ctx, pool); err != nil { // fenced writes read the leases
		return nil, fmt.Errorf("pgrows: %w", err)
	}
	if err := pgschema.Migrate(ctx, pool, "rows", migrations); err != nil {
		return nil, fmt.Errorf("pgrows: %w", err)
	}
	return &Rows{pool: pool}, nil
}

// Get returns the row of (bot, person, name).
func (r *Rows) Get(ctx context.Context, bot, person, name string) (wake.Row, bool, error) {
	var text string
	err := r.pool.QueryRow(ctx, `SELECT row FROM bots_rows WHERE bot = $1 AND person = $2 AND name = $3`, bot, person, name).Scan(&text)
	if errors.Is(err, pgx.ErrNoRows) {
		return wake.Row{}, false, nil
	}
	if err != nil {
		return wake.Row{}, false, fmt.Errorf("session row of %s: %w", bot, err)
	}
	var row wake.Row
	if err := json.Unmarshal([]byte(text), &row); err != nil {
		return wake.Row{}, false, fmt.Errorf("session row of %s cannot be read: %w", bot, err)
	}
	row.Bot, row.Person, row.Name = bot, person, name
	return row, true, nil
}

// Put writes the row over any of the same (bot, person, name), committed
// before it returns. With a fence in ctx (lease.WithFence) it writes only
// while the fence's key's lease has its token, in the same statement, and
// is lease.ErrFenced otherwise.
func (r *Rows) Put(ctx context.Context, row wake.Row) error {
	data, err := json.Marshal(row)
	if err != nil {
		return fmt.Errorf("encode session row: %w", err)
	}
	args := []any{row.Bot, row.Person, row.Name, string(data)}
	cond := "true"
	if f, ok := lease.FenceFrom(ctx); ok {
		cond, args = pglease.FenceSQL(5, 6), append(args, f.Key, f.Token)
	}
	tag, err := r.pool.Exec(ctx, `INSERT INTO bots_rows (bot, person, name, row) SELECT $1, $2, $3, $4 WHERE `+cond+`
		ON CONFLICT (bot, person, name) DO UPDATE SET row = excluded.row`, args...)
	if err != nil {
		return fmt.Errorf("write session row of %s: %w", row.Bot, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("write session row of %s: %w", row.Bot, lease.ErrFenced)
	}
	return nil
}

// RemoveBot deletes every row of bot.
func (r *Rows) RemoveBot(ctx context.Context, bot string) error {
	if _, err := r.pool.Exec(ctx, `DELETE FROM bots_rows WHERE bot = $1`, bot); err != nil {
		return fmt.Errorf("remove the session rows of %s: %w", bot, err)
	}
	return nil
}
