// Package pglease keeps leases (lease.Leases) in PostgreSQL, one row of
// bots_leases per key, on the database's clock, and gives the stores on
// the same database the check of a write's fence (FenceSQL). Tokens are
// drawn from one sequence, bots_lease_tokens, for every key, so the row of
// a lease that ended may be deleted (Prune): the key taken again gets a
// token greater than any it had, and a fenced write whose row is gone is
// refused.
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

// migrations are the schema's versions (see pgschema.Migrate). Version 1
// counted each key's tokens in its row, which was therefore never
// deleted; version 2 draws them from one sequence for every key, which
// starts above every token given before (a lease held now keeps its
// token, and its holder's fenced writes still go in), so that the rows
// of ended leases may be pruned.
var migrations = []string{`
CREATE TABLE bots_leases (
	key text COLLATE "C" PRIMARY KEY,
	holder text NOT NULL,
	token bigint NOT NULL,
	expires_at timestamptz NOT NULL
);
`, `
LOCK TABLE bots_leases IN EXCLUSIVE MODE;
CREATE SEQUENCE bots_lease_tokens AS bigint;
SELECT setval('bots_lease_tokens', (SELECT coalesce(max(token), 0) + 1 FROM bots_leases), false);
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

// Acquire makes sure the key has a row (an ended one, token 0, for a
// new key), then updates a lease that ended or is the holder's own; a
// taking over draws its token from the sequence under the row's lock, so
// the takeovers of one key get growing tokens in the order they commit.
// The two statements go in one round trip and one transaction.
func (p *Leases) Acquire(ctx context.Context, key, holder string, ttl time.Duration) (lease.Lease, bool, error) {
	if err := lease.CheckArgs(key, holder, ttl); err != nil {
		return lease.Lease{}, false, err
	}
	// A prune may delete the row between the two statements, or before
	// the read of a refusal: that key is free, and is tried again.
	for range 3 {
		l, ok, err := p.acquire(ctx, key, holder, ttl)
		if !errors.Is(err, errPruned) {
			return l, ok, err
		}
	}
	return lease.Lease{}, false, fmt.Errorf("acquire the lease of %s: its row was pruned three times running", key)
}

// errPruned is what acquire answers when the key's row was pruned while
// it acquired.
var errPruned = errors.New("pglease: the row was pruned meanwhile")

func (p *Leases) acquire(ctx context.Context, key, holder string, ttl time.Duration) (lease.Lease, bool, error) {
	l := lease.Lease{Key: key, Holder: holder}
	b := &pgx.Batch{}
	b.Queue(`INSERT INTO bots_leases (key, holder, token, expires_at) VALUES ($1, $2, 0, '-infinity') ON CONFLICT (key) DO NOTHING`, key, holder)
	b.Queue(`UPDATE bots_leases AS l SET
			holder = $2,
			token = CASE WHEN l.holder = $2 AND l.expires_at > clock_timestamp() THEN l.token ELSE nextval('bots_lease_tokens') END,
			expires_at = clock_timestamp() + $3 * interval '1 microsecond'
		WHERE l.key = $1 AND (l.expires_at <= clock_timestamp() OR l.holder = $2)
		RETURNING token, expires_at`, key, holder, ttl.Microseconds())
	br := p.pool.SendBatch(ctx, b)
	_, err := br.Exec()
	if err == nil {
		err = br.QueryRow().Scan(&l.Token, &l.Expires)
	}
	if cerr := br.Close(); err == nil {
		err = cerr
	}
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
	if errors.Is(err, pgx.ErrNoRows) {
		return lease.Lease{}, false, errPruned
	}
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

// Prune deletes the rows of the leases released (expired at -infinity) or
// expired more than grace ago, on the database's clock.
func (p *Leases) Prune(ctx context.Context, grace time.Duration) (int, error) {
	if err := lease.CheckGrace(grace); err != nil {
		return 0, err
	}
	tag, err := p.pool.Exec(ctx, `DELETE FROM bots_leases WHERE expires_at < clock_timestamp() - $1 * interval '1 microsecond'`, grace.Microseconds())
	if err != nil {
		return 0, fmt.Errorf("prune the leases: %w", err)
	}
	return int(tag.RowsAffected()), nil
}

// Holds reports whether f is its key's lease, as FenceSQL checks it: a
// write fenced with it would go in.
func (p *Leases) Holds(ctx context.Context, f lease.Fence) (bool, error) {
	var held bool
	if err := p.pool.QueryRow(ctx, `SELECT `+FenceSQL(1, 2), f.Key, f.Token).Scan(&held); err != nil {
		return false, fmt.Errorf("check the fence of %s: %w", f.Key, err)
	}
	return held, nil
}
