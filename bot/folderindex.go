package bot

import (
	"context"
	"fmt"
	"sync"

	"github.com/agenthost/bots/record"
)

// folderIndex knows which bot works in which folder on this host, so that
// a make finds whether a folder is taken - the folder itself, one holding
// it or one inside it - in time proportional to the folder's depth, not
// to the number of bots.
//
// It follows the store's change feed: every bot the store serves (a make,
// an edit, a bot made or edited by hand, a migration) claims its folder
// when its change arrives, and a deleted bot gives its folder up - its
// tombstone keeps its slug, not its folder, as the listing the index
// replaces did not. Because the feed arrives a moment after the store's
// write, the service also claims the folder of each write it makes itself
// (claim), before it lets the next make in; that claim holds until the
// feed delivers the write, so the index never forgets a folder it was
// told of, and is at worst a moment early in holding one.
type folderIndex struct {
	mu      sync.Mutex
	claims  record.FolderIndex
	byID    map[string]string      // id → the folder the feed last gave the bot
	pending map[string]folderClaim // id → the folder a write of the service claimed, until the feed delivers it
	recent  map[changeKey]struct{} // the last changes applied, for await
	recentQ []changeKey
	waiters map[changeKey][]chan struct{}
	cancel  context.CancelFunc
	done    chan struct{}
}

// folderClaim is a folder claimed by one of the service's own writes,
// held until the store's change feed delivers the change of etag.
type folderClaim struct {
	dir, etag string
}

func newFolderIndex() *folderIndex {
	return &folderIndex{
		byID:    make(map[string]string),
		pending: make(map[string]folderClaim),
		recent:  make(map[changeKey]struct{}),
		waiters: make(map[changeKey][]chan struct{}),
		done:    make(chan struct{}),
	}
}

// startFolderIndex watches store, then lists it, so that no change falls
// between the two, and follows the feed until stop. ctx bounds the first
// listing.
func startFolderIndex(ctx context.Context, store record.Store) (*folderIndex, error) {
	x := newFolderIndex()
	life, cancel := context.WithCancel(context.WithoutCancel(ctx))
	feed, err := store.Watch(life)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("watch bots: %w", err)
	}
	// The store's own entries where it shares them: at 100,000 bots a
	// listing's copies would be 40 MB.
	list, err := record.ListShared(ctx, store, nil)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("list bots: %w", err)
	}
	x.mu.Lock()
	x.byID = make(map[string]string, len(list))
	for _, e := range list {
		dir, ok := record.LocalFolder(e.Record)
		x.setLocked(e.Record.ID, dir, ok)
	}
	x.mu.Unlock()
	x.cancel = cancel
	go x.follow(feed)
	return x, nil
}

// stop stops following the feed and waits for the follower to end. It is
// idempotent.
func (x *folderIndex) stop() {
	if x.cancel == nil {
		return
	}
	x.cancel()
	<-x.done
}

func (x *folderIndex) follow(feed <-chan record.Change) {
	defer close(x.done)
	for ch := range feed {
		x.apply(ch)
	}
}

// apply takes one change of the store.
func (x *folderIndex) apply(ch record.Change) {
	id := ch.ID
	if id == "" {
		id = ch.Entry.Record.ID
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if c, ok := x.pending[id]; ok && (ch.Kind == record.Deleted || ch.Entry.ETag == c.etag) {
		delete(x.pending, id)
		x.claims.Remove(id, c.dir)
	}
	switch ch.Kind {
	case record.Created, record.Updated:
		dir, ok := record.LocalFolder(ch.Entry.Record)
		x.setLocked(id, dir, ok)
	case record.Deleted:
		x.setLocked(id, "", false)
	}
	x.appliedLocked(keyOf(id, ch))
}

// changeKey names one change for await: the bot and the etag it made, or
// the bot's deletion (etag "").
type changeKey struct{ id, etag string }

func keyOf(id string, ch record.Change) changeKey {
	if ch.Kind == record.Deleted {
		return changeKey{id: id}
	}
	return changeKey{id: id, etag: ch.Entry.ETag}
}

// recentCap is how many of the last changes applied the index remembers
// for await: a writer asks about its own change a moment after the store
// made it, far fewer changes than this later.
const recentCap = 4096

// appliedLocked remembers that k was applied and wakes whoever awaits
// it. The caller holds mu.
func (x *folderIndex) appliedLocked(k changeKey) {
	if _, ok := x.recent[k]; !ok {
		x.recent[k] = struct{}{}
		x.recentQ = append(x.recentQ, k)
		if len(x.recentQ) > recentCap {
			delete(x.recent, x.recentQ[0])
			x.recentQ = x.recentQ[1:]
		}
	}
	for _, w := range x.waiters[k] {
		close(w)
	}
	delete(x.waiters, k)
}

// await returns once the index has applied the change that gave bot id
// the etag, or with etag "" its deletion - so that a make after an edit
// or a delete the service acknowledged sees the folder it left free - or
// when ctx ends or the index stops.
func (x *folderIndex) await(ctx context.Context, id, etag string) {
	k := changeKey{id: id, etag: etag}
	x.mu.Lock()
	if _, ok := x.recent[k]; ok {
		x.mu.Unlock()
		return
	}
	ready := make(chan struct{})
	x.waiters[k] = append(x.waiters[k], ready)
	x.mu.Unlock()
	select {
	case <-ready:
		return
	case <-x.done:
	case <-ctx.Done():
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	ws := x.waiters[k]
	for i, w := range ws {
		if w == ready {
			ws = append(ws[:i], ws[i+1:]...)
			break
		}
	}
	if len(ws) == 0 {
		delete(x.waiters, k)
	} else {
		x.waiters[k] = ws
	}
}

// setLocked makes dir the folder of bot id as the feed gave it (ok false:
// it has none). Called with mu held.
func (x *folderIndex) setLocked(id, dir string, ok bool) {
	old, had := x.byID[id]
	if had && ok && old == dir {
		return
	}
	if had {
		x.claims.Remove(id, old)
		delete(x.byID, id)
	}
	if ok {
		x.claims.Add(id, dir)
		x.byID[id] = dir
	}
}

// claim records that the service's own write of etag gave bot id the
// record r, until the feed delivers that write.
func (x *folderIndex) claim(id, etag string, r record.Record) {
	dir, ok := record.LocalFolder(r)
	if !ok {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if c, had := x.pending[id]; had {
		x.claims.Remove(id, c.dir)
	}
	x.pending[id] = folderClaim{dir: dir, etag: etag}
	x.claims.Add(id, dir)
}

// takenBy returns a bot other than id whose folder is dir, holds it or
// lies inside it, and that folder; of several, the first by slug. dir is
// clean and absolute.
func (x *folderIndex) takenBy(id, dir string) (other, otherDir string, ok bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.claims.TakenBy(id, dir)
}
