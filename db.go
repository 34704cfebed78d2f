package bots

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/agenthost/bots/chatlog"
	"github.com/agenthost/bots/internal/tick"
	"github.com/agenthost/bots/lease"
	"github.com/agenthost/bots/record"
	"github.com/agenthost/bots/route"
	"github.com/agenthost/bots/route/relay"
	"github.com/agenthost/bots/telemetry"
	"github.com/agenthost/bots/wake"
	"github.com/agenthost/bots/wake/agents"
)

// A Database keeps what the instances of a team share, so that several
// Servers on one are one set of bots, and one restarted, or another,
// replays their chats: the records, the chat logs, the back sessions'
// rows, the agents' ACP session records, the leases, the routes and
// what the relay remembers. Package postgres opens one in PostgreSQL;
// an embedder that sets none links no database driver.
type Database interface {
	// Open connects, refusing to start when c.Root is not the folder
	// every instance on the database shares (a node whose shared folder
	// is not mounted would make bot folders the others cannot see), and
	// answers what the database keeps. Start calls it once.
	Open(ctx context.Context, c DatabaseConfig) (*Shared, error)
}

// DatabaseConfig is what Start opens a Database with.
type DatabaseConfig struct {
	// Root is the folder bots work under, absolute: every instance on
	// the database must share it.
	Root string
	// Logger is the server's; never nil.
	Logger *slog.Logger
	// Telemetry is where the stores time their operations; nil counts
	// nothing.
	Telemetry *telemetry.Hub
}

// Shared is what an open Database keeps. Records, Logs, Rows, Leases,
// Sessions and Close are required; Routes and RouteMemory are opened
// only when routes run.
type Shared struct {
	// Records keeps the bot records; Close closes it.
	Records record.Store
	// Logs keeps the chat logs of main chats and back sessions.
	Logs chatlog.Logs
	// Rows keeps the back sessions' rows.
	Rows wake.Rows
	// Leases are the leases of back sessions, main turns and route
	// connections, with fencing tokens.
	Leases lease.Leases
	// Sessions is the store of a provider's agent session records: the
	// agents take it in place of one in files, or none
	// (agents.Env.Sessions).
	Sessions func(provider string) agents.SessionStore
	// Routes opens the routes kept in the database, each instance
	// reading the connections from conns (its own files).
	Routes func(ctx context.Context, conns route.Store) (route.Store, error)
	// RouteMemory opens what the relay remembers: a connection taken
	// over, or a code paired on another instance's page.
	RouteMemory func(ctx context.Context) (relay.Memory, error)
	// Close closes what Open opened, Records among it.
	Close func() error
}

// check says what a Database answered that Shared requires and lacks.
func (d *Shared) check() error {
	switch {
	case d == nil:
		return errors.New("bots: database: Open answered nothing")
	case d.Records == nil || d.Logs == nil || d.Rows == nil || d.Leases == nil || d.Sessions == nil || d.Close == nil:
		return errors.New("bots: database: Open answered no records, logs, rows, leases, sessions or Close: each is required")
	}
	return nil
}

// openDatabase opens s.Database, after refusing a root that is the
// configuration folder or under it (the service would refuse such a root
// and use the default instead, which is not the folder the database's
// check is about).
func (s *Server) openDatabase(ctx context.Context) (*Shared, error) {
	root, err1 := filepath.Abs(s.root())
	config, err2 := filepath.Abs(s.ConfigDir)
	if rel, err := filepath.Rel(config, root); err1 == nil && err2 == nil && err == nil && filepath.IsLocal(rel) {
		return nil, fmt.Errorf("bots: database: refusing to start: the root %s is the configuration folder or under it", root)
	}
	if err1 != nil {
		return nil, fmt.Errorf("bots: database: root: %w", err1)
	}
	db, err := s.Database.Open(ctx, DatabaseConfig{Root: root, Logger: s.log, Telemetry: s.hub})
	if err != nil {
		return nil, err
	}
	if err := db.check(); err != nil {
		if db != nil && db.Close != nil {
			db.Close()
		}
		return nil, err
	}
	return db, nil
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
		tick.Every(ctx, every, func() bool {
			if n, err := leases.Prune(ctx, lease.PruneGrace); err != nil && ctx.Err() == nil {
				log.Warn("bots: the leases that ended could not be pruned", "err", err)
			} else if n > 0 {
				log.Debug("bots: pruned the leases that ended", "leases", n)
			}
			return true
		})
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
