// Package pgschema creates and migrates the PostgreSQL tables of the
// project's stores: each store (a component: "record", "rows", …) names
// its schema's versions as a list of steps, and Migrate brings the database
// up to the last one, once, however many instances start at once.
package pgschema

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Migrate brings component's tables in the pool's schema (its search_path)
// up to version len(steps): steps[i] takes version i to version i+1. It
// runs in one transaction under an advisory lock of the schema's own, so
// instances starting at once migrate it once and the others wait and find
// it done. A version newer than len(steps) (a newer program migrated it)
// is refused. A released step is never edited; a change is a new step.
func Migrate(ctx context.Context, pool *pgxpool.Pool, component string, steps []string) error {
	return pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('agenthost-bots-schema'), hashtext(current_schema()))`); err != nil {
			return fmt.Errorf("lock the schema: %w", err)
		}
		if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS bots_schema (component text PRIMARY KEY, version int NOT NULL)`); err != nil {
			return fmt.Errorf("make the version table: %w", err)
		}
		var v int
		err := tx.QueryRow(ctx, `SELECT version FROM bots_schema WHERE component = $1`, component).Scan(&v)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("read the %s schema's version: %w", component, err)
		}
		if v > len(steps) {
			return fmt.Errorf("the database's %s schema is version %d, newer than this program's %d: run the newer program", component, v, len(steps))
		}
		if v == len(steps) {
			return nil
		}
		for i := v; i < len(steps); i++ {
			if _, err := tx.Exec(ctx, steps[i]); err != nil {
				return fmt.Errorf("migrate the %s schema to version %d: %w", component, i+1, err)
			}
		}
		_, err = tx.Exec(ctx, `INSERT INTO bots_schema (component, version) VALUES ($1, $2)
			ON CONFLICT (component) DO UPDATE SET version = excluded.version`, component, len(steps))
		return err
	})
}
