// Package filerecord is the record.Store that keeps each bot in a file of
// its own: <configDir>/bots/<slug>/bot.md, the record as YAML frontmatter
// between two --- lines, and the tombstone of a deleted slug as
// <configDir>/bots-gone/<slug>.
//
// Every record is read once, when the store opens, and kept in memory: Get
// and List never touch the disk. A write goes to the file first, crash-safe
// (temp file, fsync, rename, folder fsync), then to memory and the change
// feed. Writes to one bot are serialised; writes to different bots run in
// parallel.
//
// A bot.md that is not a bot record is reported (a Warn log line and a
// record.Problem) and left out, and every other bot loads. A load first
// moves what an older layout left (see the migration in migrate.go).
//
// With Config.Watch, bot.md files a person edits while the store is open
// are read as they are saved and reach the change feed as any other write
// does: a folder dropped in is a Created bot, a folder removed a Deleted one
// (with its tombstone), an edit of owner or workspace is refused and
// reported, and a file that is not a bot record is reported while the bot
// keeps its last good record (see watch.go and sync.go). Whether or not it
// watches, an Update first reads the file: a hand edit the store has not
// seen yet is taken in first, so an Update whose ifMatch names the revision
// before it answers record.ErrConflict rather than write over it unseen,
// and a file changed by hand that is not a bot record refuses every Update
// with record.ErrConflict.
//
// An etag is a hash of the file's bytes, its inode, size and modification
// time. It survives a restart, changes when a person edits the file, and
// differs between two writes of the same record, because each write renames
// a new file (a new inode) over the one before.
package filerecord

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agenthost/bots/internal/atomicfile"
	"github.com/agenthost/bots/internal/feed"
	"github.com/agenthost/bots/record"
	"github.com/agenthost/bots/record/internal/entryset"
	"github.com/agenthost/bots/telemetry"
)

// instr names the spans of this package.
const instr = "github.com/agenthost/bots/record/filerecord"

// Names and modes of what the store keeps under the configuration folder.
const (
	botsDirName = "bots"
	goneDirName = "bots-gone"
	fileName    = "bot.md"
	dirPerm     = 0o700
	filePerm    = 0o600
	// deletedPrefix names a bot folder a Delete moved aside to remove it.
	// It starts like atomicfile's temp files, so a reader skips it.
	deletedPrefix = ".tmp-deleted-"
)

// Config configures a Store.
type Config struct {
	// Telemetry receives the store's operation latencies
	// (store="file"), the hand edits it takes in and refuses, and a span
	// per operation; nil records none.
	Telemetry *telemetry.Hub
	// ConfigDir is the daemon's configuration folder; the store keeps
	// bots/ and bots-gone/ in it. Required.
	ConfigDir string
	// Logger receives the store's problems (Warn) and its load summary
	// (Info). Nil discards.
	Logger *slog.Logger
	// Watch makes the store follow hand edits of <configDir>/bots/ while it
	// is open: a saved bot.md, a folder dropped in or removed. False reads
	// the files at Open only.
	Watch bool
	// WatchAfter, when not nil, holds back the watch of each bot's folder
	// (and then the sweep of temp files) until it is closed, so that a
	// host can keep the cores for the rest of its start: at 100,000 bots
	// setting the watches costs about 0.9 s of CPU. The bots folder is
	// watched from Open whatever it says, and a bot.md saved before its
	// folder's watch is set is read then, as it is without WatchAfter.
	WatchAfter <-chan struct{}
}

// Store is a record.Store on files. Make one with Open.
type Store struct {
	hub              *telemetry.Hub
	ops              telemetry.StoreCells // bots_store_operation_duration_seconds{store="file"}
	handEdits        *telemetry.Series    // bots_hand_edits_total{result}
	configDir        string
	botsDir, goneDir string
	log              *slog.Logger
	feed             *feed.Feed[record.Change]
	problemFeed      *feed.Feed[struct{}] // a value after each change of problems

	mu sync.RWMutex
	// bots holds every loaded bot, in slug order for listings in one
	// pass; a write puts a new entry, never changes one. An entry's ETag
	// is the etag of the file the store last read or wrote for it, so a
	// reader of the file can tell the store's own writes from a person's.
	bots     *entryset.Set
	gone     map[string]struct{}
	problems map[string]record.Problem // by path
	guard    record.Guard              // checks what the store takes in by hand; nil takes all
	closed   bool
	writes   sync.WaitGroup // writes in flight; Close waits for them

	lockMu sync.Mutex
	locks  map[string]*slugLock

	stop     chan struct{} // closed by Close: the background work stops
	sweeping chan struct{} // closed when the load's sweep of temp files is done; nil before a load

	watch   *watcher         // nil when not watching
	toArm   []armItem        // the folders a watching load read, for the watch to watch
	toSweep func()           // a watching load's sweep of temp files, run once the watch is set
	now     func() time.Time // the clock a load's start is read from, for its cache

	// migrateStep, when set, is called before each move or removal of a
	// migration; an error stops the migration there (tests stop it to
	// play a crash).
	migrateStep func(what string) error
}

var (
	_ record.Store           = (*Store)(nil)
	_ record.ProblemReporter = (*Store)(nil)
	_ record.FileBacked      = (*Store)(nil)
	_ record.Guarded         = (*Store)(nil)
	_ record.Filterer        = (*Store)(nil)
	_ record.IDLister        = (*Store)(nil)
	_ record.SharedLister    = (*Store)(nil)
)

// slugLock serialises the writes to one slug; refs counts its holders and
// waiters, so that the lock goes when nobody needs it.
type slugLock struct {
	mu   sync.Mutex
	refs int
}

// Open makes <configDir>/bots and <configDir>/bots-gone when missing and
// loads every bot. A bot.md that cannot be read or is not a bot record is
// reported and left out; Open fails only when the folders cannot be made or
// listed, or ctx ends.
//
// With cfg.Watch it watches the bots folder before it lists it, and each
// bot's folder in the background once it returns, looking again at any
// bot.md that changed between its read and its watch, so that no edit
// falls between the load and the watch; Close stops it.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	s, err := newStore(cfg)
	if err != nil {
		return nil, err
	}
	if err := s.open(ctx, cfg.Watch, cfg.WatchAfter); err != nil {
		return nil, err
	}
	return s, nil
}

// newStore returns a store for cfg that has read nothing yet.
func newStore(cfg Config) (*Store, error) {
	if cfg.ConfigDir == "" {
		return nil, errors.New("open bot records: no configuration folder given")
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Store{
		hub: cfg.Telemetry,
		ops: cfg.Telemetry.StoreSeries("file"),
		handEdits: cfg.Telemetry.Counter("bots_hand_edits_total", "Hand edits of bot.md files the file store saw, by result: taken (in full), or refused (in whole or in part: the problem is shown).",
			telemetry.Label{Name: "result", Values: []string{"taken", "refused"}}),
		configDir:   cfg.ConfigDir,
		botsDir:     filepath.Join(cfg.ConfigDir, botsDirName),
		goneDir:     filepath.Join(cfg.ConfigDir, goneDirName),
		log:         log,
		feed:        feed.New[record.Change](),
		problemFeed: feed.New[struct{}](),
		bots:        entryset.New(),
		gone:        make(map[string]struct{}),
		problems:    make(map[string]record.Problem),
		locks:       make(map[string]*slugLock),
		stop:        make(chan struct{}),
		now:         time.Now,
	}, nil
}

// open makes the folders, starts the watch when asked, and loads every
// bot (migrating an older layout first).
func (s *Store) open(ctx context.Context, watch bool, after <-chan struct{}) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	for _, dir := range []string{s.botsDir, s.goneDir} {
		if err := atomicfile.MkdirAll(dir, dirPerm); err != nil {
			return fmt.Errorf("open bot records: %w", err)
		}
	}
	if watch {
		s.watch = newWatcher(s)
		s.watch.start()
	}
	if err := s.load(ctx); err != nil {
		s.Close()
		return fmt.Errorf("open bot records in %s: %w", s.configDir, err)
	}
	if s.watch != nil {
		s.watch.run(after, s.toArm, s.toSweep)
		s.toArm, s.toSweep = nil, nil
	}
	return nil
}

func (s *Store) dir(id string) string  { return filepath.Join(s.botsDir, id) }
func (s *Store) file(id string) string { return filepath.Join(s.botsDir, id, fileName) }

// FileBacked reports true: a bot's persona lives in its AGENTS.md beside
// these files.
func (s *Store) FileBacked() bool { return true }

// Problems returns the problems standing now, ordered by id then path.
func (s *Store) Problems() []record.Problem {
	s.mu.RLock()
	out := make([]record.Problem, 0, len(s.problems))
	for _, p := range s.problems {
		out = append(out, p)
	}
	s.mu.RUnlock()
	record.SortProblems(out)
	return out
}

// ReportProblem logs a problem found outside the store about one of its
// bots - a persona a load could not move, say - at Warn, and keeps it for
// Problems until ClearProblem (a problem at a bot.md also goes when the
// file is good again). A problem standing at the same path is replaced;
// with the same reason it keeps the time it was first seen.
func (s *Store) ReportProblem(id, path, reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.report(id, path, reason)
}

// ClearProblem drops the problem standing at path, if there is one.
func (s *Store) ClearProblem(path string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clear(path)
}

// clear drops the problems standing at paths, and tells WatchProblems
// when there were any. The caller holds s.mu for writing.
func (s *Store) clear(paths ...string) {
	gone := false
	for _, p := range paths {
		if _, ok := s.problems[p]; ok {
			delete(s.problems, p)
			gone = true
		}
	}
	if gone {
		s.problemFeed.Publish(struct{}{})
	}
}

// WatchProblems returns a channel that receives a value after each change
// of Problems: a problem reported, changed or cleared. It is closed when
// ctx is done or the store is closed.
func (s *Store) WatchProblems(ctx context.Context) <-chan struct{} {
	return s.problemFeed.Subscribe(ctx)
}

// report logs a problem at Warn and keeps it for Problems. The caller holds
// s.mu for writing. A problem standing at the path with the same reason
// keeps the time it was first seen.
func (s *Store) report(id, path, reason string) {
	s.log.Warn("bot record problem", "id", id, "path", path, "reason", reason)
	p := record.Problem{ID: id, Path: path, Reason: reason, Since: time.Now()}
	if old, ok := s.problems[path]; ok && old.Reason == reason {
		if old.ID == id {
			return
		}
		p.Since = old.Since
	}
	s.problems[path] = p
	s.problemFeed.Publish(struct{}{})
}

// SetGuard installs g and checks every bot the store serves with it,
// oldest first: a bot it refuses is left out, and reported at its file
// until the file is good again. Every later hand edit, and every bot made
// by hand, is checked with it too (see reconcile).
func (s *Store) SetGuard(g record.Guard) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.guard = g
	if g == nil {
		return
	}
	// Oldest first: a sort of small keys (creation time, slug, place),
	// which moves 40 bytes a swap and compares without following a
	// pointer, where a sort of the records themselves moves hundreds of
	// bytes (a third of the check at 100,000 bots) and one of pointers to
	// them misses the cache at every comparison. The records are the
	// stored entries' own, never changed once stored: none is copied.
	all := make([]*record.Record, 0, s.bots.Len())
	byAge := make([]agedRecord, 0, s.bots.Len())
	s.bots.Each(func(e *record.Entry) bool {
		t := e.Record.CreatedAt
		byAge = append(byAge, agedRecord{sec: t.Unix(), nsec: int32(t.Nanosecond()), id: e.Record.ID, i: len(all)})
		all = append(all, &e.Record)
		return true
	})
	slices.SortFunc(byAge, func(a, b agedRecord) int {
		return cmp.Or(cmp.Compare(a.sec, b.sec), cmp.Compare(a.nsec, b.nsec), strings.Compare(a.id, b.id))
	})
	// Each bot is checked against the kept ones its folder could clash
	// with (see record.Guard), found in a trie of their folders: a check
	// of every kept bot for each would cost n² at a start of n bots.
	var kept folderTrie
	// Each folder is split once.
	for _, a := range byAge {
		p := all[a.i]
		var parts []string
		if p.Workspace != "" {
			parts = elems(p.Workspace)
		}
		var near []record.Record
		if parts != nil {
			near = kept.nearAt(parts)
		}
		if err := g(*p, near); err != nil {
			s.bots.Delete(p.ID)
			s.report(p.ID, s.file(p.ID), err.Error()+"; the bot is left out")
			continue
		}
		if parts != nil {
			kept.addAt(parts, p)
		}
	}
}

// agedRecord is what SetGuard sorts a record by: its creation time and
// slug, and its place in the list of the records.
type agedRecord struct {
	sec  int64
	nsec int32
	id   string
	i    int
}

// guardLocked checks r, a record taken in by hand, with the guard against
// the other bots the store serves whose folder could clash with r's (see
// record.Guard): a look at each bot's folder, where a copy of every bot
// for the guard to compare would cost a hand edit milliseconds at 100,000
// bots. The caller holds s.mu.
func (s *Store) guardLocked(r record.Record) error {
	if s.guard == nil {
		return nil
	}
	var others []record.Record
	if r.Workspace != "" {
		dir := filepath.Clean(r.Workspace)
		s.bots.Each(func(e *record.Entry) bool {
			if e.Record.ID != r.ID && e.Record.Workspace != "" && folderNear(dir, filepath.Clean(e.Record.Workspace)) {
				others = append(others, e.Record)
			}
			return true
		})
	}
	return s.guard(r, others)
}

func clone(e record.Entry) record.Entry {
	e.Record = e.Record.Clone()
	return e
}

// entry returns the bot's current entry as a value to read: its slices and
// map are the store's, and are not to be changed. The caller holds s.mu.
func (s *Store) entry(id string) (record.Entry, bool) {
	e, ok := s.bots.Get(id)
	if !ok {
		return record.Entry{}, false
	}
	return *e, true
}

// Get returns the bot's current entry.
func (s *Store) Get(ctx context.Context, id string) (_ record.Entry, err error) {
	_, op := s.hub.Begin(ctx, s.ops.Get, instr, "store get")
	defer func() { op.End(err) }()
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return record.Entry{}, record.ErrClosed
	}
	e, ok := s.bots.Get(id)
	if !ok {
		return record.Entry{}, fmt.Errorf("get %s: %w", id, record.ErrNotFound)
	}
	return clone(*e), nil
}

// List returns every bot, ordered by id.
func (s *Store) List(ctx context.Context) (_ []record.Entry, err error) {
	_, op := s.hub.Begin(ctx, s.ops.List, instr, "store list")
	defer func() { op.End(err) }()
	return s.ListFunc(ctx, func(record.Record) bool { return true })
}

// ListFunc returns copies of the bots for which keep reports true, ordered
// by id, in one pass over the bots in slug order.
func (s *Store) ListFunc(ctx context.Context, keep func(record.Record) bool) ([]record.Entry, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, record.ErrClosed
	}
	return s.bots.Copies(keep), nil
}

// ListShared returns the store's own entries of the bots for which keep
// reports true (every bot for a nil keep), ordered by id, copying none.
func (s *Store) ListShared(ctx context.Context, keep func(*record.Record) bool) ([]*record.Entry, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, record.ErrClosed
	}
	return s.bots.Shared(keep), nil
}

// ListIDs returns the slugs of the bots for which keep reports true, in
// order, copying no record.
func (s *Store) ListIDs(ctx context.Context, keep func(record.Record) bool) ([]string, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, record.ErrClosed
	}
	return s.bots.IDs(keep), nil
}

// Gone reports whether the slug has a tombstone.
func (s *Store) Gone(ctx context.Context, id string) (_ bool, err error) {
	_, op := s.hub.Begin(ctx, s.ops.Gone, instr, "store gone")
	defer func() { op.End(err) }()
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return false, record.ErrClosed
	}
	_, ok := s.gone[id]
	return ok, nil
}

// Watch returns the changes made after the call, in write order.
func (s *Store) Watch(ctx context.Context) (<-chan record.Change, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, record.ErrClosed
	}
	return s.feed.Subscribe(ctx), nil
}

// Close waits for the writes in flight, closes every change feed and makes
// later calls fail with record.ErrClosed. It is idempotent.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	close(s.stop)
	if s.sweeping != nil {
		<-s.sweeping
	}
	if s.watch != nil {
		s.watch.close()
	}
	s.writes.Wait()
	s.feed.Close()
	s.problemFeed.Close()
	return nil
}

// Create writes a new bot's file and returns the record as the file keeps
// it (times to the millisecond). It refuses a taken slug (ErrExists),
// including one whose folder holds a bot.md the store could not load, and a
// spent one (ErrGone).
func (s *Store) Create(ctx context.Context, r record.Record) (_ record.Entry, err error) {
	_, op := s.hub.Begin(ctx, s.ops.Create, instr, "store create")
	defer func() { op.End(err) }()
	if err := record.CheckSlug(r.ID); err != nil {
		return record.Entry{}, fmt.Errorf("create: %w", err)
	}
	id := r.ID
	data, rec, err := encode(r)
	if err != nil {
		return record.Entry{}, fmt.Errorf("create %s: %w", id, err)
	}
	done, err := s.begin(ctx, id)
	if err != nil {
		return record.Entry{}, fmt.Errorf("create %s: %w", id, err)
	}
	defer done()
	s.mu.RLock()
	_, gone := s.gone[id]
	_, exists := s.bots.Get(id)
	s.mu.RUnlock()
	switch {
	case gone:
		return record.Entry{}, fmt.Errorf("create %s: %w", id, record.ErrGone)
	case exists:
		return record.Entry{}, fmt.Errorf("create %s: %w", id, record.ErrExists)
	}
	if _, err := os.Lstat(s.file(id)); err == nil {
		return record.Entry{}, fmt.Errorf("create %s: %w: %s is there but is not a bot record the store could read", id, record.ErrExists, s.file(id))
	} else if !errors.Is(err, fs.ErrNotExist) {
		return record.Entry{}, fmt.Errorf("create %s: %w", id, err)
	}
	if err := atomicfile.MkdirAll(s.dir(id), dirPerm); err != nil {
		return record.Entry{}, fmt.Errorf("create %s: %w", id, err)
	}
	e, err := s.write(rec, data, nil)
	if err != nil {
		return record.Entry{}, fmt.Errorf("create %s: %w", id, err)
	}
	s.commit(record.Created, e)
	return clone(e), nil
}

// Update rewrites a bot's file and returns the record as the file keeps it.
func (s *Store) Update(ctx context.Context, r record.Record, ifMatch string) (_ record.Entry, err error) {
	_, op := s.hub.Begin(ctx, s.ops.Update, instr, "store update")
	defer func() { op.End(err) }()
	id := r.ID
	if record.CheckSlug(id) != nil {
		return record.Entry{}, fmt.Errorf("update %q: %w", id, record.ErrNotFound)
	}
	data, rec, err := encode(r)
	if err != nil {
		return record.Entry{}, fmt.Errorf("update %s: %w", id, err)
	}
	done, err := s.begin(ctx, id)
	if err != nil {
		return record.Entry{}, fmt.Errorf("update %s: %w", id, err)
	}
	defer done()
	was, err := s.catchUp(id, true)
	if err != nil {
		return record.Entry{}, fmt.Errorf("update %s: %w", id, err)
	}
	if err := s.check(id, ifMatch); err != nil {
		return record.Entry{}, fmt.Errorf("update %s: %w", id, err)
	}
	e, err := s.write(rec, data, was)
	if err != nil {
		return record.Entry{}, fmt.Errorf("update %s: %w", id, err)
	}
	s.commit(record.Updated, e)
	return clone(e), nil
}

// Delete writes the slug's tombstone durably, then removes the bot's folder
// with everything in it (bot.md, sessions/, logs/). Once the tombstone is
// written the bot is deleted: a folder that cannot be removed is reported,
// and a load finds it as a spent name.
func (s *Store) Delete(ctx context.Context, id string, ifMatch string) (err error) {
	_, op := s.hub.Begin(ctx, s.ops.Delete, instr, "store delete")
	defer func() { op.End(err) }()
	if record.CheckSlug(id) != nil {
		return fmt.Errorf("delete %q: %w", id, record.ErrNotFound)
	}
	done, err := s.begin(ctx, id)
	if err != nil {
		return fmt.Errorf("delete %s: %w", id, err)
	}
	defer done()
	if _, err := s.catchUp(id, false); err != nil {
		return fmt.Errorf("delete %s: %w", id, err)
	}
	if err := s.check(id, ifMatch); err != nil {
		return fmt.Errorf("delete %s: %w", id, err)
	}
	stone := fmt.Appendf(nil, "deletedAt: %s\n", record.FormatTime(time.Now()))
	if err := atomicfile.Write(filepath.Join(s.goneDir, id), stone, filePerm); err != nil {
		return fmt.Errorf("delete %s: write tombstone: %w", id, err)
	}
	rmErr := s.removeFolder(id)
	s.mu.Lock()
	old, _ := s.entry(id)
	s.bots.Delete(id)
	s.gone[id] = struct{}{}
	if rmErr != nil {
		s.report(id, s.dir(id), fmt.Sprintf("the folder of the deleted bot could not be removed: %v", rmErr))
	}
	s.feed.Publish(record.Change{Kind: record.Deleted, ID: id, Entry: clone(old)})
	s.mu.Unlock()
	return nil
}

// removeFolder moves the bot's folder aside in one rename, makes that
// durable, then removes it: a crash leaves either the whole folder or a temp
// folder the next load clears.
func (s *Store) removeFolder(id string) error {
	aside := filepath.Join(s.botsDir, deletedPrefix+id+"-"+strconv.FormatInt(time.Now().UnixNano(), 36))
	if err := os.Rename(s.dir(id), aside); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	if err := atomicfile.SyncDir(s.botsDir); err != nil {
		return err
	}
	return os.RemoveAll(aside)
}

// encode returns the bytes of r's file and the record a read of them gives
// back, refusing a record whose file would not read back as a bot.
func encode(r record.Record) ([]byte, record.Record, error) {
	data := Encode(r)
	rec, err := Decode(r.ID, data)
	if err != nil {
		return nil, record.Record{}, fmt.Errorf("the record cannot be kept: %w", err)
	}
	return data, rec, nil
}

// begin starts a write to id: it fails when ctx is done or the store
// closed, counts the write for Close, and takes the slug's lock. done
// undoes both.
func (s *Store) begin(ctx context.Context, id string) (done func(), err error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s.mu.RLock()
	if s.closed {
		s.mu.RUnlock()
		return nil, record.ErrClosed
	}
	s.writes.Add(1)
	s.mu.RUnlock()
	unlock := s.lock(id)
	done = func() {
		unlock()
		s.writes.Done()
	}
	s.mu.RLock()
	closed := s.closed
	s.mu.RUnlock()
	if closed {
		done()
		return nil, record.ErrClosed
	}
	return done, nil
}

// check answers whether a write to an existing bot may go on. The caller
// holds the slug's lock.
func (s *Store) check(id, ifMatch string) error {
	s.mu.RLock()
	old, ok := s.bots.Get(id)
	s.mu.RUnlock()
	if !ok {
		return record.ErrNotFound
	}
	if ifMatch != "" && ifMatch != old.ETag {
		return record.ErrConflict
	}
	return nil
}

// write replaces the bot's file with data, the bytes of rec. With was not
// nil, the file must still be the one of that stat when the new one is
// renamed over it; otherwise a person saved it meanwhile and the write is
// refused with record.ErrConflict.
func (s *Store) write(rec record.Record, data []byte, was *fileStat) (record.Entry, error) {
	path := s.file(rec.ID)
	var still func() error
	if was != nil {
		still = func() error {
			if fi, err := os.Lstat(path); err != nil || statOf(fi) != *was {
				return fmt.Errorf("%w: %s was changed by hand while it was being written", record.ErrConflict, path)
			}
			return nil
		}
	}
	st, err := replaceFile(path, data, still)
	if err != nil {
		return record.Entry{}, err
	}
	return record.Entry{Record: rec, ETag: etagOf(data, st)}, nil
}

// commit makes a written entry the bot's and publishes the change, under
// the store's lock so that the feed is in write order.
func (s *Store) commit(kind record.ChangeKind, e record.Entry) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bots.Put(e)
	s.clear(s.file(e.Record.ID))
	s.feed.Publish(record.Change{Kind: kind, ID: e.Record.ID, Entry: clone(e)})
}

// lock takes the lock of slug id and returns what releases it.
func (s *Store) lock(id string) (unlock func()) {
	s.lockMu.Lock()
	l := s.locks[id]
	if l == nil {
		l = &slugLock{}
		s.locks[id] = l
	}
	l.refs++
	s.lockMu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		s.lockMu.Lock()
		l.refs--
		if l.refs == 0 {
			delete(s.locks, id)
		}
		s.lockMu.Unlock()
	}
}

// readBot reads the bot.md of the folder id and decides what it holds: the
// bot's entry, errNoFile when there is no bot.md, or an error saying why the
// file is not a bot record; and the stat of the file it read (zero when it
// read none). It touches no state, so a load and a watcher of hand edits
// can both use it.
func readBot(path, id string) (record.Entry, fileStat, error) {
	d := decoderPool.Get().(*decoder)
	defer decoderPool.Put(d)
	return d.readBot(path, id)
}

// maxKeptBuffer bounds the buffer a decoder keeps from one file to the
// next: a rare large bot.md is read into a buffer of its own.
const maxKeptBuffer = 64 << 10

// readBot is readBot reading into d's buffer, with d's map and shared
// values.
func (d *decoder) readBot(path, id string) (record.Entry, fileStat, error) {
	data, st, err := readFileInto(path, d.buf)
	if err != nil {
		return record.Entry{}, fileStat{}, err
	}
	d.keepBuffer(data)
	return d.entry(id, data, st)
}

// keepBuffer keeps data's buffer for the next read when it grew, and is
// not too large to keep.
func (d *decoder) keepBuffer(data []byte) {
	if cap(data) > cap(d.buf) && cap(data) <= maxKeptBuffer {
		d.buf = data[:0]
	}
}

// entry decodes bot id's bot.md of data and stat st into its entry.
func (d *decoder) entry(id string, data []byte, st fileStat) (record.Entry, fileStat, error) {
	r, err := d.decode(id, data)
	if err != nil {
		return record.Entry{}, st, err
	}
	return record.Entry{Record: r, ETag: d.etags.etag(data, st)}, st, nil
}

// readBotCached is readBot for a load that began at began, taking the
// bytes from c when the cache holds the file (c's key is not zero) with
// the stat it has now. keep is what the next cache is to hold of the
// file: a zero key for nothing, no bytes for a file read here (the
// cache's write reads it again: a load keeps no file's bytes), and
// cached says the bytes were the cache's.
func (d *decoder) readBotCached(path, id string, c cachedFile, began time.Time) (e record.Entry, st fileStat, keep cachedFile, cached bool, err error) {
	var data []byte
	var key cacheKey
	if c.key.ino != 0 {
		if k, ok := statKey(path); ok && k == c.key {
			data, key, cached = c.data, k, true
		}
	}
	if cached {
		st = key.stat()
	} else {
		if data, st, key, err = readFileKeyed(path, d.buf); err != nil {
			return record.Entry{}, fileStat{}, cachedFile{}, false, err
		}
		d.keepBuffer(data)
	}
	if e, st, err = d.entry(id, data, st); err != nil {
		return record.Entry{}, st, cachedFile{}, cached, err
	}
	if key.cacheable(began) {
		keep.key = key
		if cached {
			keep.data = data
		}
	}
	return e, st, keep, cached, nil
}
