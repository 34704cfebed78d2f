package bot

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
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
	root    *folderNode
	byID    map[string]string      // id → the folder the feed last gave the bot
	pending map[string]folderClaim // id → the folder a write of the service claimed, until the feed delivers it
	cancel  context.CancelFunc
	done    chan struct{}
}

// folderClaim is a folder claimed by one of the service's own writes,
// held until the store's change feed delivers the change of etag.
type folderClaim struct {
	dir, etag string
}

// folderNode is one path element of the trie of claimed folders.
type folderNode struct {
	children map[string]*folderNode
	ids      []string // the bots that claim this very folder (a bot may claim it twice: from the feed and from a pending write)
	below    int      // the claims in folders strictly below this one
}

func newFolderIndex() *folderIndex {
	return &folderIndex{
		root:    &folderNode{},
		byID:    make(map[string]string),
		pending: make(map[string]folderClaim),
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
	list, err := store.List(ctx)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("list bots: %w", err)
	}
	for _, e := range list {
		x.set(e.Record.ID, e.Record)
	}
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
		x.root.remove(id, c.dir)
	}
	switch ch.Kind {
	case record.Created, record.Updated:
		x.setLocked(id, ch.Entry.Record)
	case record.Deleted:
		x.setLocked(id, record.Record{})
	}
}

// set makes r the record of bot id as the feed gave it.
func (x *folderIndex) set(id string, r record.Record) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.setLocked(id, r)
}

func (x *folderIndex) setLocked(id string, r record.Record) {
	dir, ok := claimedFolder(r)
	old, had := x.byID[id]
	if had && ok && old == dir {
		return
	}
	if had {
		x.root.remove(id, old)
		delete(x.byID, id)
	}
	if ok {
		x.root.add(id, dir)
		x.byID[id] = dir
	}
}

// claim records that the service's own write of etag gave bot id the
// record r, until the feed delivers that write.
func (x *folderIndex) claim(id, etag string, r record.Record) {
	dir, ok := claimedFolder(r)
	if !ok {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if c, had := x.pending[id]; had {
		x.root.remove(id, c.dir)
	}
	x.pending[id] = folderClaim{dir: dir, etag: etag}
	x.root.add(id, dir)
}

// claimedFolder is the folder on this host r claims: its workspace,
// cleaned, when it is absolute and r names no computer.
func claimedFolder(r record.Record) (string, bool) {
	if r.Computer != "" || r.Workspace == "" {
		return "", false
	}
	dir := filepath.Clean(r.Workspace)
	if !filepath.IsAbs(dir) {
		return "", false
	}
	return dir, true
}

// takenBy returns a bot other than id whose folder is dir, holds it or
// lies inside it, and that folder; of several, the first by slug. dir is
// clean and absolute.
func (x *folderIndex) takenBy(id, dir string) (other, otherDir string, ok bool) {
	x.mu.Lock()
	defer x.mu.Unlock()
	n := x.root
	path := ""
	consider := func(ids []string, where string) {
		for _, c := range ids {
			if c != id && (!ok || c < other) {
				other, otherDir, ok = c, where, true
			}
		}
	}
	for _, part := range splitFolder(dir) {
		if n = n.children[part]; n == nil {
			return other, otherDir, ok
		}
		path = joinPart(path, part)
		consider(n.ids, path) // dir lies inside (or is) this bot's folder
	}
	if n.below > 0 {
		n.walkBelow(path, func(ids []string, where string) { consider(ids, where) })
	}
	return other, otherDir, ok
}

// splitFolder returns the elements of a clean absolute path; "/" has none.
func splitFolder(dir string) []string {
	dir = strings.TrimPrefix(dir, filepath.VolumeName(dir))
	dir = strings.Trim(dir, string(filepath.Separator))
	if dir == "" {
		return nil
	}
	return strings.Split(dir, string(filepath.Separator))
}

// joinPart adds one element to a path splitFolder split.
func joinPart(path, part string) string {
	return path + string(filepath.Separator) + part
}

func (n *folderNode) add(id, dir string) {
	for _, part := range splitFolder(dir) {
		n.below++
		next := n.children[part]
		if next == nil {
			if n.children == nil {
				n.children = make(map[string]*folderNode)
			}
			next = &folderNode{}
			n.children[part] = next
		}
		n = next
	}
	n.ids = append(n.ids, id)
}

// remove takes away one claim of dir by id, and the nodes left empty.
func (n *folderNode) remove(id, dir string) {
	parts := splitFolder(dir)
	path := make([]*folderNode, 0, len(parts)+1)
	path = append(path, n)
	for _, part := range parts {
		if n = n.children[part]; n == nil {
			return // never claimed
		}
		path = append(path, n)
	}
	i := -1
	for j, c := range n.ids {
		if c == id {
			i = j
			break
		}
	}
	if i < 0 {
		return
	}
	n.ids = append(n.ids[:i], n.ids[i+1:]...)
	if len(n.ids) == 0 {
		n.ids = nil
	}
	for k := len(parts) - 1; k >= 0; k-- {
		parent, child := path[k], path[k+1]
		parent.below--
		if child.below == 0 && len(child.ids) == 0 {
			delete(parent.children, parts[k])
		}
	}
}

// walkBelow calls fn with the claims of every folder strictly below n,
// whose path is path.
func (n *folderNode) walkBelow(path string, fn func(ids []string, where string)) {
	for part, child := range n.children {
		where := joinPart(path, part)
		if len(child.ids) > 0 {
			fn(child.ids, where)
		}
		if child.below > 0 {
			child.walkBelow(where, fn)
		}
	}
}
