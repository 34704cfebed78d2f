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
	"github.com/agenthost/bots/record"
	"github.com/agenthost/bots/record/internal/entryset"
)

// Store is an in-memory record.Store. The zero value is not usable; call New.
type Store struct {
	mu     sync.RWMutex
	bots   *entryset.Set // every bot; a write puts a new entry, never changes one
	gone   map[string]bool
	closed bool
	feed   *feed.Feed[record.Change]
}

var (
	_ record.Store        = (*Store)(nil)
	_ record.Filterer     = (*Store)(nil)
	_ record.IDLister     = (*Store)(nil)
	_ record.SharedLister = (*Store)(nil)
)

// New returns an empty store.
func New() *Store {
	return &Store{
		bots: entryset.New(),
		gone: make(map[string]bool),
		feed: feed.New[record.Change](),
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
	e, ok := s.bots.Get(id)
	if !ok {
		return record.Entry{}, fmt.Errorf("get %s: %w", id, record.ErrNotFound)
	}
	return clone(*e), nil
}

// List returns every bot, ordered by id.
func (s *Store) List(ctx context.Context) ([]record.Entry, error) {
	return s.ListFunc(ctx, func(record.Record) bool { return true })
}

// ListFunc returns copies of the bots for which keep reports true, ordered
// by id.
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
// order.
func (s *Store) ListIDs(ctx context.Context, keep func(record.Record) bool) ([]string, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return nil, record.ErrClosed
	}
	return s.bots.IDs(keep), nil
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
	if _, ok := s.bots.Get(r.ID); ok {
		return record.Entry{}, fmt.Errorf("create %s: %w", r.ID, record.ErrExists)
	}
	e := record.Entry{Record: r.Clone(), ETag: newETag()}
	s.bots.Put(e)
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
	old, ok := s.bots.Get(r.ID)
	if !ok {
		return record.Entry{}, fmt.Errorf("update %s: %w", r.ID, record.ErrNotFound)
	}
	if ifMatch != "" && ifMatch != old.ETag {
		return record.Entry{}, fmt.Errorf("update %s: %w", r.ID, record.ErrConflict)
	}
	e := record.Entry{Record: r.Clone(), ETag: newETag()}
	s.bots.Put(e)
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
	old, ok := s.bots.Get(id)
	if !ok {
		return fmt.Errorf("delete %s: %w", id, record.ErrNotFound)
	}
	if ifMatch != "" && ifMatch != old.ETag {
		return fmt.Errorf("delete %s: %w", id, record.ErrConflict)
	}
	s.bots.Delete(id)
	s.gone[id] = true
	s.feed.Publish(record.Change{Kind: record.Deleted, ID: id, Entry: clone(*old)})
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
