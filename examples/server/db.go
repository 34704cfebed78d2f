package main

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/agenthost/bots/record"
	"github.com/agenthost/bots/record/filerecord"
	"github.com/agenthost/bots/record/pgrecord"
)

// openStore opens where the records live: the PostgreSQL of -db (or
// BOTS_DATABASE_URL), after checking that root is the folder the
// database's instances share, or else the file store under the
// configuration folder.
func openStore(ctx context.Context, c config, root string, log *slog.Logger) (record.Store, error) {
	if c.db == "" {
		return filerecord.Open(ctx, filerecord.Config{ConfigDir: c.configDir, Logger: log, Watch: true})
	}
	// The service would refuse such a root and use the default instead,
	// which is not the folder this check is about.
	absRoot, err1 := filepath.Abs(root)
	absConfig, err2 := filepath.Abs(c.configDir)
	if rel, err := filepath.Rel(absConfig, absRoot); err1 == nil && err2 == nil && err == nil && filepath.IsLocal(rel) {
		return nil, fmt.Errorf("-db: refusing to start: the root %s is the configuration folder or under it", root)
	}
	store, err := pgrecord.Open(ctx, pgrecord.Config{URL: c.db, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("-db: %w", err)
	}
	if err := store.ClaimRoot(ctx, root); err != nil {
		store.Close()
		return nil, fmt.Errorf("-db: refusing to start: %w", err)
	}
	return store, nil
}
