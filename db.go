package bots

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agenthost/bots/chatlog"
	"github.com/agenthost/bots/chatlog/pgchatlog"
	"github.com/agenthost/bots/lease"
	"github.com/agenthost/bots/lease/pglease"
	"github.com/agenthost/bots/record/pgrecord"
	"github.com/agenthost/bots/telemetry"
	"github.com/agenthost/bots/wake"
	"github.com/agenthost/bots/wake/acp/pgacp"
	"github.com/agenthost/bots/wake/pgrows"
)

// openDatabase opens the PostgreSQL store of s.Database, after checking
// that the root is the folder every instance on the database shares
// (pgrecord.ClaimRoot): a node whose shared folder is not there refuses to
// start rather than make bot folders the others cannot see.
func (s *Server) openDatabase(ctx context.Context) (*pgrecord.Store, error) {
	root, err1 := filepath.Abs(s.root())
	config, err2 := filepath.Abs(s.ConfigDir)
	// The service would refuse such a root and use the default instead,
	// which is not the folder the check is about.
	if rel, err := filepath.Rel(config, root); err1 == nil && err2 == nil && err == nil && filepath.IsLocal(rel) {
		return nil, fmt.Errorf("bots: database: refusing to start: the root %s is the configuration folder or under it", root)
	}
	store, err := pgrecord.Open(ctx, pgrecord.Config{URL: s.Database, Logger: s.log, Telemetry: s.hub})
	if err != nil {
		return nil, fmt.Errorf("bots: database: %w", err)
	}
	if err := store.ClaimRoot(ctx, root); err != nil {
		store.Close()
		return nil, fmt.Errorf("bots: database: refusing to start: %w", err)
	}
	return store, nil
}

// shared is what instances on one database keep there besides the
// records: chat logs, back-session rows and ACP session records.
type shared struct {
	pool   *pgxpool.Pool // the records', which the rest shares
	logs   chatlog.Logs
	rows   wake.Rows
	acp    *pgacp.Records
	leases lease.Leases
	holder string // this instance among the leases' holders
}

// openShared creates or migrates the tables of what the instances share,
// on the records' pool; the chat logs' operations are timed into hub.
func openShared(ctx context.Context, pool *pgxpool.Pool, hub *telemetry.Hub) (*shared, error) {
	logs, err := pgchatlog.Open(ctx, pool)
	if err != nil {
		return nil, fmt.Errorf("bots: database: %w", err)
	}
	logs.Measure(hub)
	rows, err := pgrows.Open(ctx, pool)
	if err != nil {
		return nil, fmt.Errorf("bots: database: %w", err)
	}
	recs, err := pgacp.Open(ctx, pool)
	if err != nil {
		return nil, fmt.Errorf("bots: database: %w", err)
	}
	leases, err := pglease.Open(ctx, pool)
	if err != nil {
		return nil, fmt.Errorf("bots: database: %w", err)
	}
	return &shared{pool: pool, logs: logs, rows: rows, acp: recs, leases: leases, holder: holderName()}, nil
}

// pruneLeases deletes, every `every`, the leases that ended (released,
// or expired lease.PruneGrace ago: a main turn's lease is one row per
// turn) until the returned stop is called; stop waits for it. Every
// instance on the database prunes; a row deleted twice is no matter.
func pruneLeases(leases lease.Leases, every time.Duration, log *slog.Logger) (stop func() error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			if n, err := leases.Prune(ctx, lease.PruneGrace); err != nil && ctx.Err() == nil {
				log.Warn("bots: the leases that ended could not be pruned", "err", err)
			} else if n > 0 {
				log.Debug("bots: pruned the leases that ended", "leases", n)
			}
		}
	}()
	return func() error {
		cancel()
		<-done
		return nil
	}
}

// holderName names this instance among the holders of leases: its host
// name, process id and a random part, so that a restarted instance is
// another holder and takes over what it held before as anyone would.
func holderName() string {
	host, _ := os.Hostname()
	var b [6]byte
	rand.Read(b[:])
	return fmt.Sprintf("%s/%d/%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}
