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
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agenthost/bots/chatlog"
	"github.com/agenthost/bots/internal/pgschema"
	"github.com/agenthost/bots/lease"
	"github.com/agenthost/bots/lease/pglease"
	"github.com/agenthost/bots/telemetry"
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
`, `
ALTER TABLE bots_logs ADD COLUMN lines bigint NOT NULL DEFAULT 0;
ALTER TABLE bots_log_lines ADD COLUMN seq bigint;
UPDATE bots_log_lines l SET seq = r.rn
	FROM (SELECT log, n, row_number() OVER (PARTITION BY log ORDER BY n) AS rn FROM bots_log_lines) r
	WHERE r.log = l.log AND r.n = l.n;
UPDATE bots_logs g SET lines = (SELECT count(*) FROM bots_log_lines l WHERE l.log = g.id);
ALTER TABLE bots_log_lines ALTER COLUMN seq SET NOT NULL;
CREATE UNIQUE INDEX bots_log_lines_seq ON bots_log_lines (log, seq);
`}

// Version 2 numbers a log's lines 1, 2, … (seq) and keeps their count in
// the log's row (lines): an append updates that row, so the appends to one
// log are serialised by its row lock and committed in the order of their
// numbers, and an append at a count (AppendAt) is a compare-and-set on it.
// Each write notifies the schema's channel (notifyExpr) with the log's key
// and its count, which Follow hears.

// notifyExpr notifies the schema's channel that the log of the statement's
// parameters $1 to $3 holds n lines.
func notifyExpr(n string) string {
	return `pg_notify('bots_logs_' || left(md5(current_schema()), 16), json_build_array($1::text, $2::text, $3::text, ` + n + `)::text)`
}

// Logs is a chatlog.Logs in PostgreSQL. Every write is committed before
// it returns; an Append without sync does not wait for its commit to reach
// the disk (synchronous_commit off for it alone). A write whose context carries a
// fence (lease.WithFence) is made only while the fence's key's lease has
// its token, in the same statement; otherwise it is lease.ErrFenced. The
// zero value is not usable; call Open.
type Logs struct {
	pool *pgxpool.Pool
	ops  *telemetry.Series // bots_chatlog_operation_duration_seconds{store="postgres"}
}

// Measure times the logs' operations into hub (store="postgres"). Call it
// before the logs are used.
func (l *Logs) Measure(hub *telemetry.Hub) { l.ops = hub.LogSeries("postgres") }

// timed records an operation begun at began, when measured.
func (l *Logs) timed(op string, began time.Time) {
	if l.ops != nil {
		l.ops.Since(began, op)
	}
}

// now is the time when the logs are measured, else zero.
func (l *Logs) now() time.Time {
	if l.ops == nil {
		return time.Time{}
	}
	return time.Now()
}

var _ chatlog.Shared = (*Logs)(nil)

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
	defer l.timed("create", l.now())
	if err := key.Check(); err != nil {
		return err
	}
	if err := chatlog.CheckLine(first); err != nil {
		return err
	}
	cond, args := fence(ctx, string(key.Kind), key.Bot, key.Session, string(first))
	tag, err := l.pool.Exec(ctx, `WITH log AS (
			INSERT INTO bots_logs (kind, bot, session, lines) SELECT $1, $2, $3, 1 WHERE `+cond+` RETURNING id),
		line AS (INSERT INTO bots_log_lines (log, seq, line) SELECT id, 1, $4 FROM log RETURNING seq)
		SELECT `+notifyExpr("seq")+` FROM line`, args...)
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
	return l.append(ctx, key, -1, line, sync)
}

// AppendAt inserts one line when the log holds n lines.
func (l *Logs) AppendAt(ctx context.Context, key chatlog.Key, n int64, line []byte, sync bool) error {
	if n < 0 {
		return fmt.Errorf("chat log %s: a count of %d lines", key, n)
	}
	return l.append(ctx, key, n, line, sync)
}

// append inserts one line, at the count at when it is not negative.
func (l *Logs) append(ctx context.Context, key chatlog.Key, at int64, line []byte, sync bool) error {
	defer l.timed(telemetry.AppendOp(sync), l.now())
	if err := key.Check(); err != nil {
		return err
	}
	if err := chatlog.CheckLine(line); err != nil {
		return err
	}
	cond, args := fence(ctx, string(key.Kind), key.Bot, key.Session, string(line))
	if at >= 0 {
		args = append(args, at)
		cond += fmt.Sprintf(" AND lines = $%d", len(args))
	}
	// Without sync the commit does not wait for the WAL to reach the disk
	// (synchronous_commit off for this statement's transaction alone): the
	// line outlives this process at once, and a crash of the database
	// itself may lose the last few such lines, never a synced one.
	async := ""
	if !sync {
		async = `, set_config('synchronous_commit', 'off', true)`
	}
	// The update takes the log's row lock: appends to one log wait for
	// each other, and one at a count sees the count the one before it
	// committed.
	tag, err := l.pool.Exec(ctx, `WITH log AS (
			UPDATE bots_logs SET lines = lines + 1 WHERE kind = $1 AND bot = $2 AND session = $3 AND `+cond+` RETURNING id, lines),
		line AS (INSERT INTO bots_log_lines (log, seq, line) SELECT id, lines, $4 FROM log RETURNING seq)
		SELECT `+notifyExpr("seq")+async+` FROM line`, args...)
	if code(err) == "23503" { // removed meanwhile
		return fmt.Errorf("chat log %s: %w", key, fs.ErrNotExist)
	}
	if err != nil {
		return fmt.Errorf("append to chat log %s: %w", key, err)
	}
	if tag.RowsAffected() == 0 { // never there, fenced, or another count
		err := l.fenced(ctx, key)
		if at >= 0 && !errors.Is(err, lease.ErrFenced) {
			var there bool
			if qerr := l.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM bots_logs WHERE kind = $1 AND bot = $2 AND session = $3)`,
				string(key.Kind), key.Bot, key.Session).Scan(&there); qerr != nil {
				return fmt.Errorf("append to chat log %s: %w", key, qerr)
			}
			if there {
				return fmt.Errorf("chat log %s: %w", key, chatlog.ErrConflict)
			}
		}
		return err
	}
	return nil
}

// Read returns the log's lines in the order they were appended.
func (l *Logs) Read(ctx context.Context, key chatlog.Key) ([][]byte, []string, error) {
	// One statement: the log's row and its lines from one snapshot.
	return l.read(ctx, key, 0)
}

// ReadAfter returns the log's lines after its first n.
func (l *Logs) ReadAfter(ctx context.Context, key chatlog.Key, n int64) ([][]byte, error) {
	lines, _, err := l.read(ctx, key, n)
	return lines, err
}

// read returns the log's lines after its first n.
func (l *Logs) read(ctx context.Context, key chatlog.Key, n int64) ([][]byte, []string, error) {
	defer l.timed("read", l.now())
	if err := key.Check(); err != nil {
		return nil, nil, err
	}
	rows, err := l.pool.Query(ctx, `SELECT g.id, l.line FROM bots_logs g LEFT JOIN bots_log_lines l ON l.log = g.id AND l.seq > $4
		WHERE g.kind = $1 AND g.bot = $2 AND g.session = $3 ORDER BY l.seq`, string(key.Kind), key.Bot, key.Session, n)
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
	defer l.timed("list", l.now())
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
	defer l.timed("remove", l.now())
	if err := key.Check(); err != nil {
		return err
	}
	cond, args := fence(ctx, string(key.Kind), key.Bot, key.Session)
	tag, err := l.pool.Exec(ctx, `WITH gone AS (DELETE FROM bots_logs WHERE kind = $1 AND bot = $2 AND session = $3 AND `+cond+` RETURNING id)
		SELECT `+notifyExpr("0")+` FROM gone`, args...)
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
