// Package pgchatlog keeps chat logs (chatlog.Logs) in PostgreSQL: one
// table row per log and one per line, so that every instance on the
// database, or one started after a restart, replays a chat from the same
// lines. A line is kept as the text it was given, byte for byte, and lines
// come back in the order they were appended.
package pgchatlog

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agenthost/bots/chatlog"
	"github.com/agenthost/bots/internal/pgschema"
	"github.com/agenthost/bots/lease"
	"github.com/agenthost/bots/lease/pglease"
)

// migrations are the schema's versions (see pgschema.Migrate). A log's id
// is new each time it is created, so lines of a removed log never show in
// a log created again under its key; a line's n orders the lines of a log
// (one writer appends to a log at a time).
var migrations = []string{`
CREATE TABLE bots_logs (
	kind text COLLATE "C" NOT NULL,
	bot text COLLATE "C" NOT NULL,
	session text COLLATE "C" NOT NULL,
	id bigint GENERATED ALWAYS AS IDENTITY UNIQUE,
	PRIMARY KEY (kind, bot, session)
);
CREATE TABLE bots_log_lines (
	log bigint NOT NULL REFERENCES bots_logs (id) ON DELETE CASCADE,
	n bigint GENERATED ALWAYS AS IDENTITY,
	line text NOT NULL,
	PRIMARY KEY (log, n)
);
`}

// Logs is a chatlog.Logs in PostgreSQL. Every write is committed before
// it returns; an Append without sync does not wait for its commit to reach
// the disk (synchronous_commit off for it alone). A write whose context carries a
// fence (lease.WithFence) is made only while the fence's key's lease has
// its token, in the same statement; otherwise it is lease.ErrFenced. The
// zero value is not usable; call Open.
type Logs struct {
	pool *pgxpool.Pool
}

var _ chatlog.Logs = (*Logs)(nil)

// Open creates or migrates the log tables in the pool's schema and returns
// the logs kept there. The pool stays the caller's.
func Open(ctx context.Context, pool *pgxpool.Pool) (*Logs, error) {
	if pool == nil {
		return nil, errors.New("pgchatlog: no pool")
	}
	if err := pglease.Migrate(ctx, pool); err != nil { // fenced writes read the leases
		return nil, fmt.Errorf("pgchatlog: %w", err)
	}
	if err := pgschema.Migrate(ctx, pool, "chatlog", migrations); err != nil {
		return nil, fmt.Errorf("pgchatlog: %w", err)
	}
	return &Logs{pool: pool}, nil
}

// fence returns the fence ctx carries as the last two parameters of a
// statement whose parameters so far are args: its condition, true without
// a fence, and args with the fence's key and token.
func fence(ctx context.Context, args ...any) (string, []any) {
	f, ok := lease.FenceFrom(ctx)
	if !ok {
		return "true", args
	}
	return pglease.FenceSQL(len(args)+1, len(args)+2), append(args, f.Key, f.Token)
}

// fenced tells a write the fence refused from one whose log is not there,
// after a write that changed nothing.
func (l *Logs) fenced(ctx context.Context, key chatlog.Key) error {
	if f, ok := lease.FenceFrom(ctx); ok {
		var held bool
		err := l.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM bots_leases WHERE key = $1 AND token = $2)`, f.Key, f.Token).Scan(&held)
		if err != nil {
			return fmt.Errorf("chat log %s: %w", key, err)
		}
		if !held {
			return fmt.Errorf("chat log %s: %w", key, lease.ErrFenced)
		}
	}
	return fmt.Errorf("chat log %s: %w", key, fs.ErrNotExist)
}

// code is the SQLSTATE of err, "" when it is not a PostgreSQL error.
func code(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// Create inserts the log's row and its first line in one transaction.
func (l *Logs) Create(ctx context.Context, key chatlog.Key, first []byte) error {
	if err := key.Check(); err != nil {
		return err
	}
	if err := chatlog.CheckLine(first); err != nil {
		return err
	}
	cond, args := fence(ctx, string(key.Kind), key.Bot, key.Session, string(first))
	tag, err := l.pool.Exec(ctx, `WITH log AS (
			INSERT INTO bots_logs (kind, bot, session) SELECT $1, $2, $3 WHERE `+cond+` RETURNING id)
		INSERT INTO bots_log_lines (log, line) SELECT id, $4 FROM log`, args...)
	if code(err) == "23505" { // unique_violation: the log is there
		return fmt.Errorf("chat log %s: %w", key, fs.ErrExist)
	}
	if err != nil {
		return fmt.Errorf("create chat log %s: %w", key, err)
	}
	if tag.RowsAffected() == 0 {
		return fmt.Errorf("chat log %s: %w", key, lease.ErrFenced)
	}
	return nil
}

// Append inserts one line, committed before it returns.
func (l *Logs) Append(ctx context.Context, key chatlog.Key, line []byte, sync bool) error {
	if err := key.Check(); err != nil {
		return err
	}
	if err := chatlog.CheckLine(line); err != nil {
		return err
	}
	cond, args := fence(ctx, string(key.Kind), key.Bot, key.Session, string(line))
	// Without sync the commit does not wait for the WAL to reach the disk
	// (synchronous_commit off for this statement's transaction alone): the
	// line outlives this process at once, and a crash of the database
	// itself may lose the last few such lines, never a synced one.
	async := ""
	if !sync {
		async = `, (SELECT set_config('synchronous_commit', 'off', true)) AS async`
	}
	tag, err := l.pool.Exec(ctx, `INSERT INTO bots_log_lines (log, line)
		SELECT id, $4 FROM bots_logs`+async+` WHERE kind = $1 AND bot = $2 AND session = $3 AND `+cond, args...)
	if code(err) == "23503" { // removed meanwhile
		return fmt.Errorf("chat log %s: %w", key, fs.ErrNotExist)
	}
	if err == nil && tag.RowsAffected() == 0 { // never there, or fenced
		return l.fenced(ctx, key)
	}
	if err != nil {
		return fmt.Errorf("append to chat log %s: %w", key, err)
	}
	return nil
}

// Read returns the log's lines in the order they were appended.
func (l *Logs) Read(ctx context.Context, key chatlog.Key) ([][]byte, []string, error) {
	if err := key.Check(); err != nil {
		return nil, nil, err
	}
	// One statement: the log's row and its lines from one snapshot.
	rows, err := l.pool.Query(ctx, `SELECT g.id, l.line FROM bots_logs g LEFT JOIN bots_log_lines l ON l.log = g.id
		WHERE g.kind = $1 AND g.bot = $2 AND g.session = $3 ORDER BY l.n`, string(key.Kind), key.Bot, key.Session)
	if err != nil {
		return nil, nil, fmt.Errorf("read chat log %s: %w", key, err)
	}
	defer rows.Close()
	var lines [][]byte
	found := false
	for rows.Next() {
		var id int64
		var line *string
		if err := rows.Scan(&id, &line); err != nil {
			return nil, nil, fmt.Errorf("read chat log %s: %w", key, err)
		}
		found = true
		if line != nil {
			lines = append(lines, []byte(*line))
		}
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("read chat log %s: %w", key, err)
	}
	if !found {
		return nil, nil, fmt.Errorf("chat log %s: %w", key, fs.ErrNotExist)
	}
	return lines, nil, nil
}

// List returns the keys of every log of kind.
func (l *Logs) List(ctx context.Context, kind chatlog.Kind) ([]chatlog.Key, error) {
	if err := (chatlog.Key{Kind: kind, Bot: "x", Session: "x"}).Check(); err != nil {
		return nil, err
	}
	rows, err := l.pool.Query(ctx, `SELECT bot, session FROM bots_logs WHERE kind = $1`, string(kind))
	if err != nil {
		return nil, fmt.Errorf("list chat logs: %w", err)
	}
	defer rows.Close()
	var out []chatlog.Key
	for rows.Next() {
		k := chatlog.Key{Kind: kind}
		if err := rows.Scan(&k.Bot, &k.Session); err != nil {
			return nil, fmt.Errorf("list chat logs: %w", err)
		}
		out = append(out, k)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list chat logs: %w", err)
	}
	return out, nil
}

// Remove deletes the log and its lines.
func (l *Logs) Remove(ctx context.Context, key chatlog.Key) error {
	if err := key.Check(); err != nil {
		return err
	}
	cond, args := fence(ctx, string(key.Kind), key.Bot, key.Session)
	tag, err := l.pool.Exec(ctx, `DELETE FROM bots_logs WHERE kind = $1 AND bot = $2 AND session = $3 AND `+cond, args...)
	if err != nil {
		return fmt.Errorf("remove chat log %s: %w", key, err)
	}
	if tag.RowsAffected() == 0 {
		if err := l.fenced(ctx, key); errors.Is(err, lease.ErrFenced) {
			return err
		}
	}
	return nil
}
