// Package entryset keeps a record store's bots in memory: each bot's
// current entry by slug, and the bots in slug order, so that a listing is
// one pass over them - no sort, no map lookup a bot - and may hand out the
// entries themselves. An entry in a Set is never changed: a write puts a
// new entry in the bot's place (copy on write), so an entry a listing
// handed out keeps the values it had, however the bot changes after.
//
// memrecord and filerecord keep their bots in one.
package entryset

import (
	"sync"

	"github.com/agenthost/bots/internal/slugorder"
	"github.com/agenthost/bots/record"
)

// Set is a store's bots. Make one with New.
//
// Its store's lock guards it: Put and Delete are called with that lock
// held for writing; Get, Len and the listings with it held for reading at
// least. Listings that run at once under the read lock settle the order
// under the Set's own mutex.
type Set struct {
	bots map[string]*handle

	mu    sync.Mutex // guards order; taken inside the store's lock
	order *slugorder.Order[*handle]

	slab []handle // handles for the bots to come, from Grow
}

// handle is a bot's place in the set: the order holds handles, so a write
// changes which entry the handle points at and not the order. A deleted
// bot's handle is dead, and the next settle of the order drops it.
type handle struct {
	e    *record.Entry // the bot's current entry; never changed in place
	dead bool
}

// New returns an empty set.
func New() *Set {
	return &Set{
		bots:  make(map[string]*handle),
		order: slugorder.New(func(h *handle) string { return h.e.Record.ID }),
	}
}

// Grow makes room for n more bots at once (a load knows how many it will
// put): the map grows once, and their handles are one allocation.
func (s *Set) Grow(n int) {
	if n <= 0 {
		return
	}
	if len(s.bots) == 0 {
		s.bots = make(map[string]*handle, n)
	}
	s.slab = make([]handle, n)
}

// Len is how many bots the set holds.
func (s *Set) Len() int { return len(s.bots) }

// Get returns the bot's current entry, which the caller must not change.
func (s *Set) Get(id string) (*record.Entry, bool) {
	h, ok := s.bots[id]
	if !ok {
		return nil, false
	}
	return h.e, true
}

// Put makes e the bot's entry: a bot made, or a new revision of one. The
// set keeps e as it is, slices and map included: the caller hands them
// over and changes them no more.
func (s *Set) Put(e record.Entry) { s.put(&e) }

// Load puts the entries a store's load read, given in slug order (so the
// order needs no sort), skipping nil ones. The set keeps the entries
// given: the caller hands them over and changes them no more.
func (s *Set) Load(es []*record.Entry) {
	s.Grow(len(es))
	for _, p := range es {
		if p != nil {
			s.put(p)
		}
	}
}

func (s *Set) put(p *record.Entry) {
	if h, ok := s.bots[p.Record.ID]; ok {
		h.e = p // a listing that handed out the old entry keeps it as it was
		return
	}
	var h *handle
	if len(s.slab) > 0 {
		h, s.slab = &s.slab[0], s.slab[1:]
	} else {
		h = new(handle)
	}
	h.e = p
	s.bots[p.Record.ID] = h
	s.mu.Lock()
	s.order.Add(h)
	s.mu.Unlock()
}

// Delete drops the bot and returns its last entry, or false when the set
// does not hold it.
func (s *Set) Delete(id string) (*record.Entry, bool) {
	h, ok := s.bots[id]
	if !ok {
		return nil, false
	}
	delete(s.bots, id)
	h.dead = true
	s.mu.Lock()
	s.order.Remove()
	s.mu.Unlock()
	return h.e, true
}

// handles returns every live or dead handle in slug order, the order
// brought up to date first: bots made since the last listing are merged
// in and deleted ones dropped, in one pass. The slice is the order's own
// and stays unchanged while the caller holds its store's lock.
func (s *Set) handles() []*handle {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.order.Settle(func(h *handle) bool { return !h.dead })
	return s.order.IDs()
}

// Each calls fn with every bot's entry in slug order, until fn returns
// false. fn must not change the entry.
func (s *Set) Each(fn func(*record.Entry) bool) {
	for _, h := range s.handles() {
		// a bot deleted since the settle is skipped
		if !h.dead && !fn(h.e) {
			return
		}
	}
}

// Shared returns the entries of the bots for which keep reports true
// (every bot for a nil keep), in slug order: the set's own, which the
// caller must not change.
func (s *Set) Shared(keep func(*record.Record) bool) []*record.Entry {
	hs := s.handles()
	if keep == nil {
		out := make([]*record.Entry, 0, len(hs))
		for _, h := range hs {
			if !h.dead {
				out = append(out, h.e)
			}
		}
		return out
	}
	var out []*record.Entry
	for _, h := range hs {
		if !h.dead && keep(&h.e.Record) {
			out = append(out, h.e)
		}
	}
	return out
}

// Copies returns copies of the entries of the bots for which keep reports
// true, in slug order: the caller's own.
func (s *Set) Copies(keep func(record.Record) bool) []record.Entry {
	// The kept are counted first, so that the copies, a few hundred bytes
	// each, are laid out once: grown by append, 100,000 of them were
	// copied over and over (0.4 s of a start).
	var kept []*record.Entry
	for _, h := range s.handles() {
		if !h.dead && keep(h.e.Record) {
			kept = append(kept, h.e)
		}
	}
	if len(kept) == 0 {
		return nil
	}
	out := make([]record.Entry, len(kept))
	for i, e := range kept {
		out[i] = *e
		out[i].Record = e.Record.Clone()
	}
	return out
}

// IDs returns the slugs of the bots for which keep reports true, in
// order.
func (s *Set) IDs(keep func(record.Record) bool) []string {
	var out []string
	for _, h := range s.handles() {
		if !h.dead && keep(h.e.Record) {
			out = append(out, h.e.Record.ID)
		}
	}
	return out
}
