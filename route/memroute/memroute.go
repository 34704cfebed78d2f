// Package memroute is a route.Store in memory, for tests and for hosts
// that set their routes up in code: the connections are given at New and
// the routes live as long as the store.
package memroute

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/agenthost/bots/route"
)

// Store keeps routes in memory. Its methods are safe for concurrent use.
type Store struct {
	mu      sync.Mutex
	conns   []route.Connection
	routes  map[string]route.Route
	version int
	watches map[chan struct{}]bool
}

var _ route.Store = (*Store)(nil)

// New returns a store of the connections conns and no route.
func New(conns []route.Connection) *Store {
	s := &Store{routes: map[string]route.Route{}, watches: map[chan struct{}]bool{}}
	s.conns = slices.Clone(conns)
	slices.SortFunc(s.conns, func(a, b route.Connection) int { return strings.Compare(a.ID, b.ID) })
	return s
}

// SetConnections replaces the connections, as an operator's edit does,
// and tells the watches.
func (s *Store) SetConnections(conns []route.Connection) {
	conns = slices.Clone(conns)
	slices.SortFunc(conns, func(a, b route.Connection) int { return strings.Compare(a.ID, b.ID) })
	s.mu.Lock()
	defer s.mu.Unlock()
	s.conns = conns
	s.notifyLocked()
}

// Connections lists the connections, ordered by ID.
func (s *Store) Connections(context.Context) ([]route.Connection, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.conns), nil
}

// Routes lists the routes, ordered by ID.
func (s *Store) Routes(context.Context) ([]route.Route, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]route.Route, 0, len(s.routes))
	for _, id := range slices.Sorted(maps.Keys(s.routes)) {
		out = append(out, s.routes[id])
	}
	return out, nil
}

// PutRoute saves r by its Version.
func (s *Store) PutRoute(_ context.Context, r route.Route) (route.Route, error) {
	if bad := route.Check(r); bad != nil {
		return route.Route{}, fmt.Errorf("the route %q was not saved: %s", r.ID, strings.Join(bad, " "))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.routes[r.ID]
	if ok && old.Version != r.Version || !ok && r.Version != "" {
		return route.Route{}, fmt.Errorf("the route %q: %w", r.ID, route.ErrConflict)
	}
	s.version++
	r.Version = strconv.Itoa(s.version)
	r.Tools = slices.Clone(r.Tools)
	s.routes[r.ID] = r
	s.notifyLocked()
	return r, nil
}

// DeleteRoute removes the route id of that version ("" for any).
func (s *Store) DeleteRoute(_ context.Context, id, version string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	old, ok := s.routes[id]
	switch {
	case !ok:
		return fmt.Errorf("the route %q: %w", id, route.ErrNotFound)
	case version != "" && old.Version != version:
		return fmt.Errorf("the route %q: %w", id, route.ErrConflict)
	}
	delete(s.routes, id)
	s.notifyLocked()
	return nil
}

// Watch sends after every write until ctx ends.
func (s *Store) Watch(ctx context.Context) (<-chan struct{}, error) {
	ch := make(chan struct{}, 1)
	s.mu.Lock()
	s.watches[ch] = true
	s.mu.Unlock()
	context.AfterFunc(ctx, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.watches, ch)
		close(ch)
	})
	return ch, nil
}

func (s *Store) notifyLocked() {
	for ch := range s.watches {
		select {
		case ch <- struct{}{}:
		default: // a value is waiting: it stands for this change too
		}
	}
}
