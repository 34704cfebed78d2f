//go:build !linux

package filerecord

import (
	"hash/maphash"
	"os"
	"path/filepath"
	"reflect"
	"sync"

	"github.com/rjeczalik/notify"
)

// How the notify watch holds its watches.
const (
	// watchGroups is how many notify channels the bot folders' watches are
	// spread over. notify can drop the watches of a channel only all at
	// once, at a cost that grows with every watch of the process for each
	// one dropped, and a folder made again where one was removed needs its
	// watch set again: only that folder's group is dropped and set again.
	watchGroups = 32
	// watchBuffer is each channel's room for events. notify drops an event
	// its receiver has no room for, so a channel more than half full makes
	// the watcher look at every folder again.
	watchBuffer = 256
)

// watchEvents are the events a watch asks for: Create covers a rename into
// the folder, Rename a rename out of it (or of the folder itself), Write an
// in-place write or truncate, Remove a file's or the folder's removal.
var watchEvents = []notify.Event{notify.Create, notify.Remove, notify.Write, notify.Rename}

// notifyWatch watches with the notify library, where there is no inotify.
// notify starts three goroutines of its own, once per process, at the first
// watch of any store; they serve every store after it. Its Stop finds each
// watch to drop by a linear search, so closing a store of n watched
// folders costs O(n²): about a second at 10,000.
type notifyWatch struct {
	w      *watcher
	root   chan notify.EventInfo
	groups [watchGroups]chan notify.EventInfo
	cases  []reflect.SelectCase // stop, root, groups
	seed   maphash.Seed
	stop   chan struct{}
	wg     sync.WaitGroup

	mu      sync.Mutex
	members [watchGroups]map[string]struct{} // folders watched, by group
	stale   map[string]struct{}              // watched folders removed or renamed away
}

func newFolderWatch(w *watcher) folderWatch {
	n := &notifyWatch{
		w:     w,
		root:  make(chan notify.EventInfo, 4*watchBuffer),
		seed:  maphash.MakeSeed(),
		stop:  make(chan struct{}),
		stale: make(map[string]struct{}),
	}
	n.cases = append(n.cases,
		reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(n.stop)},
		reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(n.root)})
	for g := range n.groups {
		n.groups[g] = make(chan notify.EventInfo, watchBuffer)
		n.members[g] = make(map[string]struct{})
		n.cases = append(n.cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(n.groups[g])})
	}
	return n
}

func (n *notifyWatch) group(name string) int {
	return int(maphash.String(n.seed, name) % watchGroups)
}

func (n *notifyWatch) watchRoot() error {
	n.wg.Add(1)
	go n.drain()
	return notify.Watch(n.w.dir, n.root, watchEvents...)
}

func (n *notifyWatch) watchFolder(name string) error {
	g := n.group(name)
	if err := notify.Watch(filepath.Join(n.w.dir, name), n.groups[g], watchEvents...); err != nil {
		return err
	}
	n.mu.Lock()
	n.members[g][name] = struct{}{}
	delete(n.stale, name)
	n.mu.Unlock()
	return nil
}

// folderMade watches the folder at once when notify holds no watch for its
// path, and sets its group again when notify holds a stale one.
func (n *notifyWatch) folderMade(name string) {
	g := n.group(name)
	n.mu.Lock()
	_, member := n.members[g][name]
	_, stale := n.stale[name]
	n.mu.Unlock()
	switch {
	case !member:
		n.w.armFolder(name)
	case stale:
		n.rearmGroup(g)
	}
}

// rearmGroup drops every watch of group g and sets again those of its
// folders that are there, then looks at each of them: an event may have
// come while the group was not watched.
func (n *notifyWatch) rearmGroup(g int) {
	n.mu.Lock()
	names := n.members[g]
	n.members[g] = make(map[string]struct{})
	n.mu.Unlock()
	notify.Stop(n.groups[g])
	for name := range names {
		if fi, err := os.Stat(filepath.Join(n.w.dir, name)); err == nil && fi.IsDir() {
			n.w.armFolder(name)
		} else {
			n.mu.Lock()
			delete(n.stale, name)
			n.mu.Unlock()
		}
	}
	n.w.markNames(names)
}

func (n *notifyWatch) queued() bool {
	if len(n.root) > 0 {
		return true
	}
	for _, c := range n.groups {
		if len(c) > 0 {
			return true
		}
	}
	return false
}

// close stops drain and drops every watch. After it notify sends nothing
// more on its channels.
func (n *notifyWatch) close() {
	close(n.stop)
	n.wg.Wait()
	notify.Stop(n.root)
	for _, c := range n.groups {
		notify.Stop(c)
	}
}

// drain takes notify's events in as fast as they come, so that notify
// never drops one for want of room, and hands them to the watcher.
func (n *notifyWatch) drain() {
	defer n.wg.Done()
	for {
		chosen, v, _ := reflect.Select(n.cases)
		if chosen == 0 {
			return
		}
		n.take(v.Interface().(notify.EventInfo))
		if c := n.cases[chosen].Chan; c.Len() > c.Cap()/2 {
			n.w.overflow()
		}
	}
}

func (n *notifyWatch) take(ev notify.EventInfo) {
	name, file, ok := n.w.split(ev.Path())
	if !ok {
		return
	}
	var kind evKind
	switch ev.Event() {
	case notify.Create:
		kind = evCreate
	case notify.Remove:
		kind = evRemove
	case notify.Rename:
		kind = evRename
	default:
		kind = evWrite
	}
	if file == "" && (kind == evRemove || kind == evRename) {
		// notify keeps a watch set on a path whose folder went, and sets
		// none on a folder made there again: such a folder's group is set
		// again when it comes.
		n.mu.Lock()
		if _, ok := n.members[n.group(name)][name]; ok {
			n.stale[name] = struct{}{}
		}
		n.mu.Unlock()
	}
	n.w.note(name, file, kind)
}
