package main

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/agenthost/bots/record"
	"github.com/agenthost/bots/record/filerecord"
	"github.com/agenthost/bots/record/pgrecord"
	"github.com/agenthost/bots/wake"
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

// rowsFor says where the back-session rows are kept: with -db, in files
// under the instance's own -config, beside its chat logs, so that a restart
// continues its back sessions. They are not kept in the database until a
// lease says which instance runs a back session: without one, two
// instances would each start a session over the other's row. Nil (files
// beside the file store's records) without -db.
func rowsFor(c config) wake.Rows {
	if c.db == "" {
		return nil
	}
	return wake.NewFileRows(c.configDir)
}
