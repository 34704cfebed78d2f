// Package pglease keeps leases (lease.Leases) in PostgreSQL, one row of
// bots_leases per key, on the database's clock, and gives the stores on
// the same database the check of a write's fence (FenceSQL).
package pglease

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agenthost/bots/internal/pgschema"
	"github.com/agenthost/bots/lease"
)

// migrations are the schema's versions (see pgschema.Migrate). A row is
// never deleted: its token goes on from where it was.
var migrations = []string{`
CREATE TABLE bots_leases (
	key text COLLATE "C" PRIMARY KEY,
	holder text NOT NULL,
	token bigint NOT NULL,
	expires_at timestamptz NOT NULL
);
`}

// Migrate creates or migrates bots_leases in the pool's schema: the
// stores that check fences call it, since their writes read the table.
func Migrate(ctx context.Context, pool *pgxpool.Pool) error {
	if err := pgschema.Migrate(ctx, pool, "lease", migrations); err != nil {
		return fmt.Errorf("pglease: %w", err)
	}
	return nil
}

// FenceSQL is the condition a fenced write adds, with the fence's key and
// token as parameters $k and $t (numbers the caller gives): true when the
// key's lease has the token. It locks the lease row FOR SHARE, so a
// takeover committing meanwhile is waited for and then seen.
func FenceSQL(k, t int) string {
	return fmt.Sprintf(`EXISTS (SELECT 1 FROM bots_leases WHERE key = $%d AND token = $%d FOR SHARE)`, k, t)
}

// Leases is a lease.Leases in PostgreSQL. The zero value is not usable;
// call Open.
type Leases struct {
	pool *pgxpool.Pool
}

var _ lease.Leases = (*Leases)(nil)

// Open migrates bots_leases and returns the leases kept there. The pool
// stays the caller's.
func Open(ctx context.Context, pool *pgxpool.Pool) (*Leases, error) {
	if pool == nil {
		return nil, errors.New("pglease: no pool")
	}
	if err := Migrate(ctx, pool); err != nil {
		return nil, err
	}
	return &Leases{pool: pool}, nil
}

// Acquire is one statement: an insert, or an update of a lease that
// expired or is the holder's own; the token grows unless it is a renewal.
func (p *Leases) Acquire(ctx context.Context, key, holder string, ttl time.Duration) (lease.Lease, bool, error) {
	if err := lease.CheckArgs(key, holder, ttl); err != nil {
		return lease.Lease{}, false, err
	}
	l := lease.Lease{Key: key, Holder: holder}
	err := p.pool.QueryRow(ctx, `INSERT INTO bots_leases AS l (key, holder, token, expires_at)
		VALUES ($1, $2, 1, clock_timestamp() + $3 * interval '1 microsecond')
		ON CONFLICT (key) DO UPDATE SET
			holder = excluded.holder,
			token = CASE WHEN l.holder = excluded.holder AND l.expires_at > clock_timestamp() THEN l.token ELSE l.token + 1 END,
			expires_at = excluded.expires_at
		WHERE l.expires_at <= clock_timestamp() OR l.holder = excluded.holder
		RETURNING token, expires_at`, key, holder, ttl.Microseconds()).Scan(&l.Token, &l.Expires)
	if err == nil {
		return l, true, nil
	}
	if !errors.Is(err, pgx.ErrNoRows) {
		return lease.Lease{}, false, fmt.Errorf("acquire the lease of %s: %w", key, err)
	}
	// The holder may have let go since the statement above: a released
	// lease expires at -infinity, which no time.Time holds; it reads as
	// the epoch, long expired.
	err = p.pool.QueryRow(ctx, `SELECT holder, token, greatest(expires_at, 'epoch') FROM bots_leases WHERE key = $1`, key).Scan(&l.Holder, &l.Token, &l.Expires)
	if err != nil {
		return lease.Lease{}, false, fmt.Errorf("read the lease of %s: %w", key, err)
	}
	return l, false, nil
}

// Renew extends the lease when it still has holder and token.
func (p *Leases) Renew(ctx context.Context, key, holder string, token int64, ttl time.Duration) error {
	if err := lease.CheckArgs(key, holder, ttl); err != nil {
		return err
	}
	tag, err := p.pool.Exec(ctx, `UPDATE bots_leases SET expires_at = clock_timestamp() + $4 * interval '1 microsecond'
		WHERE key = $1 AND holder = $2 AND token = $3 AND expires_at > '-infinity'`, key, holder, token, ttl.Microseconds())
	if err != nil {
		return fmt.Errorf("renew the lease of %s: %w", key, err)
	}
	if tag.RowsAffected() == 0 {
		return lease.ErrLost
	}
	return nil
}

// Release marks the lease expired, keeping its token.
func (p *Leases) Release(ctx context.Context, key, holder string, token int64) error {
	if _, err := p.pool.Exec(ctx, `UPDATE bots_leases SET expires_at = '-infinity'
		WHERE key = $1 AND holder = $2 AND token = $3`, key, holder, token); err != nil {
		return fmt.Errorf("release the lease of %s: %w", key, err)
	}
	return nil
}
