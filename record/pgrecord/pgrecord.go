// Package pgrecord is a record.Store kept in PostgreSQL, so that several
// server instances on one database are one system: they read and write the
// same bots and tombstones, an etag is the bot's revision in the database
// (so an ifMatch is decided there, once, for every instance), and each
// instance's change feed hears every instance's writes.
//
// The feed is a change table read in revision order, woken by
// LISTEN/NOTIFY: an instance whose listening connection drops reconnects and
// reads on from the last revision it delivered, so no change is lost. The
// store keeps no files, so a bot's persona stays in its record.
package pgrecord

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/agenthost/bots/internal/feed"
	"github.com/agenthost/bots/record"
	"github.com/agenthost/bots/telemetry"
)

// instr names the spans of this package.
const instr = "github.com/agenthost/bots/record/pgrecord"

// Config configures a Store. URL or Pool is required.
type Config struct {
	// URL is the database, as pgx reads it (postgres://… or key=value);
	// its search_path, when it sets one, is the schema the store's tables
	// are in. Ignored when Pool is set.
	URL string
	// Pool is a pool the embedder holds; the store uses it and leaves it
	// open at Close. Nil means the store opens its own from URL.
	Pool *pgxpool.Pool
	// Logger receives reports; nil discards them.
	Logger *slog.Logger
	// Poll is how often the feed reads the change table without a
	// notification, as a net under a notification lost; zero means 10 s.
	Poll time.Duration
	// Keep is how long the change table keeps a change, for the feeds of
	// instances whose connection dropped to read on from; older ones are
	// removed at Open and every hour. Zero means seven days.
	Keep time.Duration
	// Telemetry receives the store's operation latencies
	// (store="postgres") and a span per operation; nil records none.
	Telemetry *telemetry.Hub
}

// Store is a record.Store in PostgreSQL. The zero value is not usable; call
// Open.
type Store struct {
	hub     *telemetry.Hub
	ops     telemetry.StoreCells // bots_store_operation_duration_seconds{store="postgres"}
	pool    *pgxpool.Pool
	ownPool bool
	log     *slog.Logger
	poll    time.Duration
	keep    time.Duration
	channel string // the NOTIFY channel of the store's schema

	feed   *feed.Feed[change]
	closed atomic.Bool
	stop   context.CancelFunc
	done   chan struct{} // closed when the listener has returned

	connected chan struct{} // closed once the listener first listens
	connOnce  sync.Once
	listener  atomic.Uint32 // the backend pid of the listening connection
}

// change is a record.Change with the revision that made it.
type change struct {
	rev int64
	c   record.Change
}

var (
	_ record.Store    = (*Store)(nil)
	_ record.Filterer = (*Store)(nil)
)

// Open connects, creates or migrates the schema, and starts the change
// feed. It returns once the feed listens, so a change made after Open
// returns is heard.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	s := &Store{hub: cfg.Telemetry, ops: cfg.Telemetry.StoreSeries("postgres"), pool: cfg.Pool, log: log, poll: cfg.Poll, feed: feed.New[change](),
		done: make(chan struct{}), connected: make(chan struct{})}
	if s.poll <= 0 {
		s.poll = 10 * time.Second
	}
	if s.keep = cfg.Keep; s.keep <= 0 {
		s.keep = 7 * 24 * time.Hour
	}
	if s.pool == nil {
		if cfg.URL == "" {
			return nil, errors.New("pgrecord: no database: give a URL or a pool")
		}
		pc, err := pgxpool.ParseConfig(cfg.URL)
		if err != nil {
			return nil, fmt.Errorf("pgrecord: the database URL cannot be read: %w", err)
		}
		if pc.MaxConns < 16 {
			pc.MaxConns = 16
		}
		if pc.ConnConfig.ConnectTimeout == 0 {
			pc.ConnConfig.ConnectTimeout = 10 * time.Second
		}
		if s.pool, err = pgxpool.NewWithConfig(ctx, pc); err != nil {
			return nil, fmt.Errorf("pgrecord: %w", err)
		}
		s.ownPool = true
	}
	fail := func(err error) (*Store, error) {
		if s.ownPool {
			s.pool.Close()
		}
		return nil, fmt.Errorf("pgrecord: %w", err)
	}
	if err := s.pool.Ping(ctx); err != nil {
		return fail(unreachable(s.pool.Config().ConnConfig, err))
	}
	if err := migrate(ctx, s.pool); err != nil {
		return fail(err)
	}
	if err := s.prune(ctx, s.pool); err != nil {
		return fail(err)
	}
	var head int64
	if err := s.pool.QueryRow(ctx, `SELECT bots_channel(), (SELECT rev FROM bots_head)`).Scan(&s.channel, &head); err != nil {
		return fail(fmt.Errorf("read the change feed's head: %w", err))
	}
	life, stop := context.WithCancel(context.Background())
	s.stop = stop
	go s.listen(life, head)
	select {
	case <-s.connected:
	case <-ctx.Done():
		s.Close()
		return nil, fmt.Errorf("pgrecord: listen for changes: %w", ctx.Err())
	}
	return s, nil
}

// Pool returns the pool the store uses.
func (s *Store) Pool() *pgxpool.Pool { return s.pool }

func etag(rev int64) string { return `"` + strconv.FormatInt(rev, 10) + `"` }

// revOf reads an etag this store made; -1 (which never matches) for any
// other, and 0 for none.
func revOf(ifMatch string) int64 {
	if ifMatch == "" {
		return 0
	}
	if len(ifMatch) < 3 || ifMatch[0] != '"' || ifMatch[len(ifMatch)-1] != '"' {
		return -1
	}
	n, err := strconv.ParseInt(ifMatch[1:len(ifMatch)-1], 10, 64)
	if err != nil || n <= 0 {
		return -1
	}
	return n
}

func decode(rev int64, text string) (record.Entry, error) {
	var r record.Record
	if err := r.UnmarshalJSON([]byte(text)); err != nil {
		return record.Entry{}, fmt.Errorf("a stored record cannot be read: %w", err)
	}
	return record.Entry{Record: r, ETag: etag(rev)}, nil
}

// fail maps an error of the database to ErrClosed once the store is
// closed, and wraps it otherwise.
func (s *Store) fail(op, id string, err error) error {
	if s.closed.Load() {
		return record.ErrClosed
	}
	return fmt.Errorf("%s %s: %w", op, id, err)
}

// Get returns the bot's current entry.
func (s *Store) Get(ctx context.Context, id string) (_ record.Entry, err error) {
	_, op := s.hub.Begin(ctx, s.ops.Get, instr, "store get")
	defer func() { op.End(err) }()
	if s.closed.Load() {
		return record.Entry{}, record.ErrClosed
	}
	var rev int64
	var text string
	err = s.pool.QueryRow(ctx, `SELECT rev, record FROM bots WHERE id = $1`, id).Scan(&rev, &text)
	if errors.Is(err, pgx.ErrNoRows) {
		return record.Entry{}, fmt.Errorf("get %s: %w", id, record.ErrNotFound)
	}
	if err != nil {
		return record.Entry{}, s.fail("get", id, err)
	}
	e, err := decode(rev, text)
	if err != nil {
		return record.Entry{}, s.fail("get", id, err)
	}
	return e, nil
}

// List returns every bot, ordered by id.
func (s *Store) List(ctx context.Context) (_ []record.Entry, err error) {
	_, op := s.hub.Begin(ctx, s.ops.List, instr, "store list")
	defer func() { op.End(err) }()
	return s.ListFunc(ctx, nil)
}

// ListFunc returns the bots for which keep reports true (every bot when
// keep is nil), ordered by id.
func (s *Store) ListFunc(ctx context.Context, keep func(record.Record) bool) ([]record.Entry, error) {
	if s.closed.Load() {
		return nil, record.ErrClosed
	}
	rows, err := s.pool.Query(ctx, `SELECT rev, record FROM bots ORDER BY id`)
	if err != nil {
		return nil, s.fail("list", "bots", err)
	}
	defer rows.Close()
	var out []record.Entry
	for rows.Next() {
		var rev int64
		var text string
		if err := rows.Scan(&rev, &text); err != nil {
			return nil, s.fail("list", "bots", err)
		}
		e, err := decode(rev, text)
		if err != nil {
			return nil, s.fail("list", "bots", err)
		}
		if keep == nil || keep(e.Record) {
			out = append(out, e)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, s.fail("list", "bots", err)
	}
	return out, nil
}

// The statuses the write functions answer instead of a revision.
const (
	statusExists      = -1
	statusGone        = -2
	statusNotFound    = -3
	statusConflict    = -4
	statusFolderTaken = -5
)

func statusError(op, id string, rev int64) error {
	switch rev {
	case statusExists:
		return fmt.Errorf("%s %s: %w", op, id, record.ErrExists)
	case statusGone:
		return fmt.Errorf("%s %s: %w", op, id, record.ErrGone)
	case statusNotFound:
		return fmt.Errorf("%s %s: %w", op, id, record.ErrNotFound)
	case statusConflict:
		return fmt.Errorf("%s %s: %w", op, id, record.ErrConflict)
	}
	return fmt.Errorf("%s %s: the database answered status %d", op, id, rev)
}

// Create stores a new bot: one statement, committed before it returns.
func (s *Store) Create(ctx context.Context, r record.Record) (_ record.Entry, err error) {
	_, op := s.hub.Begin(ctx, s.ops.Create, instr, "store create")
	defer func() { op.End(err) }()
	if err := record.CheckSlug(r.ID); err != nil {
		return record.Entry{}, fmt.Errorf("create: %w", err)
	}
	if s.closed.Load() {
		return record.Entry{}, record.ErrClosed
	}
	text := r.AppendJSON(nil)
	dir, above, lo, hi := claim(r)
	var rev int64
	if err := s.pool.QueryRow(ctx, `SELECT bots_create($1, $2, $3, $4, $5, $6)`, r.ID, string(text), dir, above, lo, hi).Scan(&rev); err != nil {
		return record.Entry{}, s.fail("create", r.ID, err)
	}
	if rev == statusFolderTaken {
		return record.Entry{}, s.takenError(ctx, "create", r)
	}
	if rev <= 0 {
		return record.Entry{}, statusError("create", r.ID, rev)
	}
	return record.Entry{Record: r.Clone(), ETag: etag(rev)}, nil
}

// Update replaces a bot's record; the database decides ifMatch.
func (s *Store) Update(ctx context.Context, r record.Record, ifMatch string) (_ record.Entry, err error) {
	_, op := s.hub.Begin(ctx, s.ops.Update, instr, "store update")
	defer func() { op.End(err) }()
	if s.closed.Load() {
		return record.Entry{}, record.ErrClosed
	}
	text := r.AppendJSON(nil)
	dir, above, lo, hi := claim(r)
	var rev int64
	if err := s.pool.QueryRow(ctx, `SELECT bots_update($1, $2, $3, $4, $5, $6, $7)`, r.ID, string(text), dir, above, lo, hi, revOf(ifMatch)).Scan(&rev); err != nil {
		return record.Entry{}, s.fail("update", r.ID, err)
	}
	if rev == statusFolderTaken {
		return record.Entry{}, s.takenError(ctx, "update", r)
	}
	if rev <= 0 {
		return record.Entry{}, statusError("update", r.ID, rev)
	}
	return record.Entry{Record: r.Clone(), ETag: etag(rev)}, nil
}

// Delete removes a bot and leaves a tombstone; the database decides
// ifMatch.
func (s *Store) Delete(ctx context.Context, id string, ifMatch string) (err error) {
	_, op := s.hub.Begin(ctx, s.ops.Delete, instr, "store delete")
	defer func() { op.End(err) }()
	if s.closed.Load() {
		return record.ErrClosed
	}
	var rev int64
	if err := s.pool.QueryRow(ctx, `SELECT bots_delete($1, $2)`, id, revOf(ifMatch)).Scan(&rev); err != nil {
		return s.fail("delete", id, err)
	}
	if rev <= 0 {
		return statusError("delete", id, rev)
	}
	return nil
}

// Gone reports whether the slug has a tombstone.
func (s *Store) Gone(ctx context.Context, id string) (_ bool, err error) {
	_, op := s.hub.Begin(ctx, s.ops.Gone, instr, "store gone")
	defer func() { op.End(err) }()
	if s.closed.Load() {
		return false, record.ErrClosed
	}
	var gone bool
	if err := s.pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM bots_gone WHERE id = $1)`, id).Scan(&gone); err != nil {
		return false, s.fail("gone", id, err)
	}
	return gone, nil
}

// Watch returns the changes made, by any instance, after the call.
func (s *Store) Watch(ctx context.Context) (<-chan record.Change, error) {
	if s.closed.Load() {
		return nil, record.ErrClosed
	}
	// Subscribe first, then read the head: every change after the head is
	// published after the subscription, and the ones before it are left
	// out here.
	sub, cancel := context.WithCancel(ctx)
	in := s.feed.Subscribe(sub)
	var head int64
	if err := s.pool.QueryRow(ctx, `SELECT rev FROM bots_head`).Scan(&head); err != nil {
		cancel()
		return nil, s.fail("watch", "bots", err)
	}
	out := make(chan record.Change)
	go func() {
		defer close(out)
		defer cancel()
		for c := range in {
			if c.rev <= head {
				continue
			}
			select {
			case out <- c.c:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, nil
}

// Close stops the change feed, closes every watch, and closes the pool the
// store opened. It is idempotent.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	s.stop()
	<-s.done
	s.feed.Close()
	if s.ownPool {
		s.pool.Close()
	}
	return nil
}

// unreachable says in one sentence that the database cc names could not
// be reached: where, as whom, the cause in a few words (not pgx's
// report of every address it tried), and what to check. It never holds
// the password.
func unreachable(cc *pgx.ConnConfig, err error) error {
	where := cc.Host
	if !strings.HasPrefix(where, "/") { // a Unix socket's folder has no port
		where = net.JoinHostPort(cc.Host, strconv.Itoa(int(cc.Port)))
	}
	cause := err.Error()
	var pgErr *pgconn.PgError
	var opErr *net.OpError
	switch {
	case errors.As(err, &pgErr):
		cause = pgErr.Message
	case errors.As(err, &opErr):
		cause = opErr.Err.Error()
	case errors.Is(err, context.DeadlineExceeded):
		cause = "no answer in time"
	default:
		if i := strings.IndexByte(cause, '\n'); i >= 0 {
			cause = cause[:i]
		}
	}
	return &unreachableError{err: err, msg: fmt.Sprintf("cannot reach the database %q at %s as user %q: %s; check that PostgreSQL runs there and takes connections, and that the URL names it",
		cc.Database, where, cc.User, cause)}
}

// unreachableError is unreachable's sentence, keeping the cause for
// errors.Is and errors.As: pgx's own report is a line per address tried.
type unreachableError struct {
	msg string
	err error
}

func (e *unreachableError) Error() string { return e.msg }
func (e *unreachableError) Unwrap() error { return e.err }
