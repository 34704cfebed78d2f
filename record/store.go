package record

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"
)

// Sentinel errors of a Store. Implementations wrap them with %w so callers
// test with errors.Is.
var (
	ErrNotFound = errors.New("no such bot")
	ErrExists   = errors.New("bot exists")
	ErrGone     = errors.New("bot was deleted and its slug is spent")
	ErrConflict = errors.New("bot changed since the given etag")
	ErrClosed   = errors.New("store is closed")
)

// FolderTakenError is how a store that several servers share refuses a
// Create or an Update whose folder on this host (Workspace, with no
// Computer) another bot works in - the folder itself, one holding it or
// one inside it - which a server's own check before the write cannot see
// when another server made that bot a moment before.
type FolderTakenError struct {
	Folder      string // the folder the write would take
	Other       string // the bot that works there, when known
	OtherFolder string // the folder that bot works in
}

// Error names the folder and, when known, the bot that works there.
func (e *FolderTakenError) Error() string {
	if e.Other == "" {
		return "folder " + e.Folder + " is taken by another bot"
	}
	return "folder " + e.Folder + " is taken: bot " + e.Other + " works in " + e.OtherFolder
}

// Entry is a record as a store holds it at one revision.
type Entry struct {
	Record Record
	// ETag is a strong per-revision token: equal etags mean the same
	// revision, and every write makes a new one.
	ETag string
}

// ChangeKind says what happened to a bot.
type ChangeKind int

// The kinds of change.
const (
	Created ChangeKind = iota + 1
	Updated
	Deleted
)

// String is the kind in a word: created, updated, deleted or unknown.
func (k ChangeKind) String() string {
	switch k {
	case Created:
		return "created"
	case Updated:
		return "updated"
	case Deleted:
		return "deleted"
	}
	return "unknown"
}

// Change is one event of a store's change feed.
type Change struct {
	Kind ChangeKind
	ID   string
	// Entry is the bot after the change; for Deleted, the last revision the
	// store had.
	Entry Entry
}

// Store keeps bot records and the tombstones of deleted slugs.
//
// A store holds copies: what a caller passes in and what it is given back
// share nothing (slices, maps) with what the store keeps, so neither
// changes the other afterwards. Create and Update refuse a record whose ID
// CheckSlug refuses, with its error. recordtest.Run checks all of this.
//
// All methods are safe for concurrent use. Writes to one bot are serialised:
// of two writes racing with the same ifMatch, exactly one succeeds. After
// Close every method returns ErrClosed.
type Store interface {
	// Get returns the bot's current entry, or ErrNotFound.
	Get(ctx context.Context, id string) (Entry, error)
	// List returns every bot, ordered by id.
	List(ctx context.Context) ([]Entry, error)
	// Create stores a new bot. It returns ErrExists when the slug is taken
	// and ErrGone when the slug was ever deleted.
	Create(ctx context.Context, r Record) (Entry, error)
	// Update replaces a bot's record. With a non-empty ifMatch it returns
	// ErrConflict unless that is the current etag. ErrNotFound when the bot
	// does not exist.
	Update(ctx context.Context, r Record, ifMatch string) (Entry, error)
	// Delete removes a bot and leaves a tombstone, so that Create on the slug
	// fails with ErrGone forever. With a non-empty ifMatch it returns
	// ErrConflict unless that is the current etag. ErrNotFound when the bot
	// does not exist.
	Delete(ctx context.Context, id string, ifMatch string) error
	// Gone reports whether the slug has a tombstone.
	Gone(ctx context.Context, id string) (bool, error)
	// Watch returns the changes made after the call, in the order they
	// were made, never dropping one however slowly the caller reads. The
	// channel is closed when ctx is done or the store is closed.
	Watch(ctx context.Context) (<-chan Change, error)
	// Close releases the store. It is idempotent.
	Close() error
}

// Problem is something wrong with a stored bot that a person should see: a
// file that is not a bot record, a hand edit that was refused. Reported
// problems are logged at Warn and may be shown to clients.
type Problem struct {
	ID     string    // the bot's slug, when known
	Path   string    // the file at fault, when there is one
	Reason string    // one sentence
	Since  time.Time // when it was first seen
}

// SortProblems orders problems by id, then path, as Problems answers them.
func SortProblems(ps []Problem) {
	slices.SortFunc(ps, func(a, b Problem) int {
		if c := strings.Compare(a.ID, b.ID); c != 0 {
			return c
		}
		return strings.Compare(a.Path, b.Path)
	})
}

// ProblemReporter is implemented by stores that can hold problems, such as
// a file store whose files people edit by hand.
type ProblemReporter interface {
	// Problems returns the problems standing now, ordered by id then path.
	Problems() []Problem
}

// Guard decides whether a store may serve a record it took in from outside
// its own writes: one found at load, made or edited by hand, or moved by a
// migration. others are the other records the store serves that r's
// folder could clash with, r's own left out: at least every one whose
// Workspace is r's, holds r's or lies inside it (a store may pass more, up
// to all of them; one that holds many records passes only those, so that
// checking n records does not cost n²). A non-nil error refuses r; its
// message is one sentence saying why. A Guard must not call the store.
type Guard func(r Record, others []Record) error

// Guarded is implemented by stores whose records can change outside their
// own writes, as files a person edits do, so that the service can hold
// every record it serves to the rules a make or an edit through it passes.
type Guarded interface {
	// SetGuard installs g. The store first checks the records it serves
	// now, oldest first (so that of two bots claiming one folder the older
	// keeps it), and leaves out each one g refuses; from then on it checks
	// every record it takes in outside its own writes, keeps the last good
	// record of a bot whose edit g refuses, and leaves out a new one g
	// refuses. Each refusal is a Problem at the bot's file, logged at Warn.
	SetGuard(g Guard)
}

// FileBacked is implemented by stores that keep records in files on this
// host, beside which a bot's persona lives in its AGENTS.md. A store that
// does not implement it (or answers false) keeps the persona in the record.
type FileBacked interface {
	FileBacked() bool
}

// Filterer is implemented by stores that can filter a listing before they
// copy it, which makes listing the few bots one reader may see among many
// cheap.
type Filterer interface {
	// ListFunc returns the bots for which keep reports true, ordered by id.
	// keep is called with the store's lock held: it must be quick and must
	// not call the store.
	ListFunc(ctx context.Context, keep func(Record) bool) ([]Entry, error)
}

// ListFunc lists the bots of s for which keep reports true, ordered by id,
// through s's own Filterer when it has one.
func ListFunc(ctx context.Context, s Store, keep func(Record) bool) ([]Entry, error) {
	if f, ok := s.(Filterer); ok {
		return f.ListFunc(ctx, keep)
	}
	all, err := s.List(ctx)
	if err != nil {
		return nil, err
	}
	out := all[:0]
	for _, e := range all {
		if keep(e.Record) {
			out = append(out, e)
		}
	}
	return out, nil
}

// IDLister is implemented by stores that can list the slugs of the bots a
// reader may see without copying their records, which is all a listing of
// names needs.
type IDLister interface {
	// ListIDs returns the slugs of the bots for which keep reports true,
	// in order. keep is called with the store's lock held: it must be
	// quick and must not call the store.
	ListIDs(ctx context.Context, keep func(Record) bool) ([]string, error)
}

// ListIDs lists the slugs of the bots of s for which keep reports true, in
// order, through s's own IDLister when it has one.
func ListIDs(ctx context.Context, s Store, keep func(Record) bool) ([]string, error) {
	if l, ok := s.(IDLister); ok {
		return l.ListIDs(ctx, keep)
	}
	list, err := ListFunc(ctx, s, keep)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(list))
	for i, e := range list {
		out[i] = e.Record.ID
	}
	return out, nil
}

// SharedLister is implemented by stores whose entries are immutable once
// stored - a write puts a new entry in the bot's place and never changes
// the one there - so that a listing can hand out the entries themselves
// rather than copies: a pointer a bot instead of a record's worth of bytes
// and three allocations.
type SharedLister interface {
	// ListShared returns the bots for which keep reports true (every bot
	// when keep is nil), ordered by id, as the store's own entries at the
	// moment of the call. The store never changes them: a later write is
	// a new entry, which a later listing or Get answers. The caller must
	// not change them either, nor the slices and map their records hold;
	// Record.Clone gives a copy of its own. keep is called with the
	// store's lock held: it must be quick, must not call the store, and
	// must not keep its argument.
	ListShared(ctx context.Context, keep func(*Record) bool) ([]*Entry, error)
}

// ListShared lists the bots of s for which keep reports true (every bot
// when keep is nil), ordered by id, through s's own SharedLister when it
// has one; otherwise it answers the copies ListFunc makes, which nothing
// else holds. Either way the caller must not change what it is given.
func ListShared(ctx context.Context, s Store, keep func(*Record) bool) ([]*Entry, error) {
	if l, ok := s.(SharedLister); ok {
		return l.ListShared(ctx, keep)
	}
	list, err := ListFunc(ctx, s, func(r Record) bool { return keep == nil || keep(&r) })
	if err != nil {
		return nil, err
	}
	out := make([]*Entry, len(list))
	for i := range list {
		out[i] = &list[i]
	}
	return out, nil
}
