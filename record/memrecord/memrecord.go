// Package memrecord is a record.Store kept in memory: real and complete,
// for tests, demos and hosts that keep bots elsewhere. It keeps no files, so
// a bot's persona stays in its record.
package memrecord

import (
	"context"
	"fmt"
	"sync"

	"github.com/oklog/ulid/v2"

	"github.com/agenthost/bots/internal/feed"
	"github.com/agenthost/bots/internal/slugorder"
	"github.com/agenthost/bots/record"
)

// Store is an in-memory record.Store. The zero value is not usable; call New.
type Store struct {
	mu     sync.RWMutex
	bots   map[string]*slot
	gone   map[string]bool
	closed bool
	feed   *feed.Feed[record.Change]
	order  *slugorder.Order[*slot] // every bot, for listings in one pass
}

// slot holds one bot. An update replaces its entry; a delete marks it
// dead, and the next listing drops it from the order.
type slot struct {
	e    record.Entry
	dead bool
}

var (
	_ record.Store    = (*Store)(nil)
	_ record.Filterer = (*Store)(nil)
	_ record.IDLister = (*Store)(nil)
)

// New returns an empty store.
func New() *Store {
	return &Store{
		bots:  make(map[string]*slot),
		order: slugorder.New(func(sl *slot) string { return sl.e.Record.ID }),
		gone:  make(map[string]bool),
		feed:  feed.New[record.Change](),
	}
}

func newETag() string { return `"` + ulid.Make().String() + `"` }

func clone(e record.Entry) record.Entry {
	e.Record = e.Record.Clone()
	return e
}

// Get returns the bot's current entry.
func (s *Store) Get(ctx context.Context, id string) (record.Entry, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return record.Entry{}, record.ErrClosed
	}
	sl, ok := s.bots[id]
	if !ok {
		return record.Entry{}, fmt.Errorf("get %s: %w", id, record.ErrNotFound)
	}
	return clone(sl.e), nil
}

// List returns every bot, ordered by id.
func (s *Store) List(ctx context.Context) ([]record.Entry, error) {
	return s.ListFunc(ctx, func(record.Record) bool { return true })
}

// ListFunc returns the bots for which keep reports true, ordered by id.
func (s *Store) ListFunc(ctx context.Context, keep func(record.Record) bool) ([]record.Entry, error) {
	var out []record.Entry
	err := s.each(func(e *record.Entry) {
		if keep(e.Record) {
			out = append(out, clone(*e))
		}
	})
	return out, err
}

// ListIDs returns the slugs of the bots for which keep reports true, in
// order.
func (s *Store) ListIDs(ctx context.Context, keep func(record.Record) bool) ([]string, error) {
	var out []string
	err := s.each(func(e *record.Entry) {
		if keep(e.Record) {
			out = append(out, e.Record.ID)
		}
	})
	return out, err
}

// each calls fn with every bot in slug order, with the store's lock held
// for reading; fn must not keep e.
func (s *Store) each(fn func(e *record.Entry)) error {
	s.mu.RLock()
	if !s.order.Settled() {
		s.mu.RUnlock()
		s.mu.Lock()
		s.order.Settle(func(sl *slot) bool { return !sl.dead })
		s.mu.Unlock()
		s.mu.RLock()
	}
	defer s.mu.RUnlock()
	if s.closed {
		return record.ErrClosed
	}
	for _, sl := range s.order.IDs() {
		// a bot deleted since the settle is skipped; one made since is
		// not listed, as if the listing had run just before it.
		if !sl.dead {
			fn(&sl.e)
		}
	}
	return nil
}

// Create stores a new bot.
func (s *Store) Create(ctx context.Context, r record.Record) (record.Entry, error) {
	if err := record.CheckSlug(r.ID); err != nil {
		return record.Entry{}, fmt.Errorf("create: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return record.Entry{}, record.ErrClosed
	}
	if s.gone[r.ID] {
		return record.Entry{}, fmt.Errorf("create %s: %w", r.ID, record.ErrGone)
	}
	if _, ok := s.bots[r.ID]; ok {
		return record.Entry{}, fmt.Errorf("create %s: %w", r.ID, record.ErrExists)
	}
	e := record.Entry{Record: r.Clone(), ETag: newETag()}
	sl := &slot{e: e}
	s.bots[r.ID] = sl
	s.order.Add(sl)
	s.feed.Publish(record.Change{Kind: record.Created, ID: r.ID, Entry: clone(e)})
	return clone(e), nil
}

// Update replaces a bot's record.
func (s *Store) Update(ctx context.Context, r record.Record, ifMatch string) (record.Entry, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return record.Entry{}, record.ErrClosed
	}
	sl, ok := s.bots[r.ID]
	if !ok {
		return record.Entry{}, fmt.Errorf("update %s: %w", r.ID, record.ErrNotFound)
	}
	if ifMatch != "" && ifMatch != sl.e.ETag {
		return record.Entry{}, fmt.Errorf("update %s: %w", r.ID, record.ErrConflict)
	}
	e := record.Entry{Record: r.Clone(), ETag: newETag()}
	sl.e = e
	s.feed.Publish(record.Change{Kind: record.Updated, ID: r.ID, Entry: clone(e)})
	return clone(e), nil
}

// Delete removes a bot and leaves a tombstone.
func (s *Store) Delete(ctx context.Context, id string, ifMatch string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return record.ErrClosed
	}
	sl, ok := s.bots[id]
	if !ok {
		return fmt.Errorf("delete %s: %w", id, record.ErrNotFound)
	}
	if ifMatch != "" && ifMatch != sl.e.ETag {
		return fmt.Errorf("delete %s: %w", id, record.ErrConflict)
	}
	old := sl.e
	delete(s.bots, id)
	sl.dead = true
	s.order.Remove()
	s.gone[id] = true
	s.feed.Publish(record.Change{Kind: record.Deleted, ID: id, Entry: old})
	return nil
}

// Gone reports whether the slug has a tombstone.
func (s *Store) Gone(ctx context.Context, id string) (bool, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return false, record.ErrClosed
	}
	return s.gone[id], nil
}

// Watch returns the changes made after the call.
func (s *Store) Watch(ctx context.Context) (<-chan record.Change, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, record.ErrClosed
	}
	return s.feed.Subscribe(ctx), nil
}

// Close releases the store; later calls fail with record.ErrClosed.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	s.feed.Close()
	return nil
}
