// Package pgsessions keeps agents' session records (agents.SessionStore)
// in PostgreSQL, one table row per (provider, key), so that a back
// session continued on another instance, or after a restart, loads the
// same agent session with session/load.
package pgsessions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agenthost/bots/internal/pgschema"
	"github.com/agenthost/bots/wake/agents"
)

// migrations are the schema's versions (see pgschema.Migrate). The record
// is kept whole as JSON.
var migrations = []string{`
CREATE TABLE bots_acp_sessions (
	provider text COLLATE "C" NOT NULL,
	key text COLLATE "C" NOT NULL,
	record text NOT NULL,
	PRIMARY KEY (provider, key)
);
`}

// Records holds every agent's session records. The zero value is not
// usable; call Open.
type Records struct {
	pool *pgxpool.Pool
}

// Open creates or migrates the table in the pool's schema. The pool stays
// the caller's.
func Open(ctx context.Context, pool *pgxpool.Pool) (*Records, error) {
	if pool == nil {
		return nil, errors.New("pgsessions: no pool")
	}
	if err := pgschema.Migrate(ctx, pool, "acp", migrations); err != nil {
		return nil, fmt.Errorf("pgsessions: %w", err)
	}
	return &Records{pool: pool}, nil
}

// Store returns the agents.SessionStore of provider's records: each agent
// keeps its own, as each keeps its own folder in files.
func (r *Records) Store(provider string) agents.SessionStore { return store{r: r, provider: provider} }

type store struct {
	r        *Records
	provider string
}

// Load returns the record kept for key.
func (s store) Load(ctx context.Context, key string) (agents.SessionRecord, bool, error) {
	var text string
	err := s.r.pool.QueryRow(ctx, `SELECT record FROM bots_acp_sessions WHERE provider = $1 AND key = $2`, s.provider, key).Scan(&text)
	if errors.Is(err, pgx.ErrNoRows) {
		return agents.SessionRecord{}, false, nil
	}
	if err != nil {
		return agents.SessionRecord{}, false, fmt.Errorf("agents: reading a session record: %w", err)
	}
	var rec agents.SessionRecord
	if err := json.Unmarshal([]byte(text), &rec); err != nil {
		return agents.SessionRecord{}, false, fmt.Errorf("agents: a session record of %s cannot be read: %w", s.provider, err)
	}
	return rec, rec.ID != "", nil
}

// Save keeps rec for key, committed before it returns.
func (s store) Save(ctx context.Context, key string, rec agents.SessionRecord) error {
	data, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("agents: encode a session record: %w", err)
	}
	_, err = s.r.pool.Exec(ctx, `INSERT INTO bots_acp_sessions (provider, key, record) VALUES ($1, $2, $3)
		ON CONFLICT (provider, key) DO UPDATE SET record = excluded.record`, s.provider, key, string(data))
	if err != nil {
		return fmt.Errorf("agents: saving a session record: %w", err)
	}
	return nil
}
