package filerecord

import (
	"errors"
	"hash/maphash"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"time"

	"github.com/rjeczalik/notify"

	"github.com/agenthost/bots/internal/atomicfile"
)

// How the watch waits for a save to be done, and how it holds its watches.
const (
	// watchQuiet is how long a bot's folder must have no events before its
	// bot.md is read: an editor's save is a burst of events (truncate and
	// write, temp file and rename, rename to a backup and write), and the
	// burst is read once, when it is over.
	watchQuiet = 40 * time.Millisecond
	// watchSettle is how long a bot.md that does not parse, a missing
	// bot.md or a missing folder must stay as it is before it is taken as
	// meant: until then it may be a save half done (truncated and not yet
	// written, deleted and not yet made again), which is never reported.
	watchSettle = 500 * time.Millisecond
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

// watcher follows hand edits of <configDir>/bots/ with notify: the bots
// folder itself, for bot folders made, removed and renamed, and each bot
// folder, for its bot.md. A bot's sessions/ and logs/ are not watched: the
// store reads nothing there, and a chat log grows at every turn.
//
// Events are only hints of which bot's folder changed: after a quiet spell
// the folder is read, under the bot's lock, and reconcile decides what the
// file holds. notify starts three goroutines of its own, once per process,
// at the first watch of any store; they serve every store after it.
type watcher struct {
	s      *Store
	dir    string   // the bots folder, absolute, as watches are set on it
	roots  []string // the bots folder as notify may name it in events
	root   chan notify.EventInfo
	groups [watchGroups]chan notify.EventInfo
	cases  []reflect.SelectCase // stop, root, groups
	seed   maphash.Seed
	stop   chan struct{}
	armed  chan struct{} // closed when armAll is done
	wake   chan struct{} // capacity 1: there is work
	wg     sync.WaitGroup
	quiet  time.Duration
	settle time.Duration

	mu       sync.Mutex
	pending  map[string]*pending              // folder name → what waits to be read
	members  [watchGroups]map[string]struct{} // folders watched, by group
	stale    map[string]struct{}              // watched folders removed or renamed away
	fresh    map[string]struct{}              // folders made or moved in, to watch
	rescan   bool                             // look at every folder again
	closed   bool
	reported bool // a watch that could not be set was reported
}

// pending is a bot folder waiting to be read.
type pending struct {
	due       time.Time // when to read it
	lastEvent time.Time
	busy      bool     // being read now
	again     bool     // an event came while it was being read
	unsettled bool     // the last read was not taken
	stat      fileStat // the file at that read
}

func newWatcher(s *Store) *watcher {
	w := &watcher{
		s:       s,
		root:    make(chan notify.EventInfo, 4*watchBuffer),
		seed:    maphash.MakeSeed(),
		stop:    make(chan struct{}),
		armed:   make(chan struct{}),
		wake:    make(chan struct{}, 1),
		quiet:   watchQuiet,
		settle:  watchSettle,
		pending: make(map[string]*pending),
		stale:   make(map[string]struct{}),
		fresh:   make(map[string]struct{}),
	}
	w.cases = append(w.cases,
		reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(w.stop)},
		reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(w.root)})
	for g := range w.groups {
		w.groups[g] = make(chan notify.EventInfo, watchBuffer)
		w.members[g] = make(map[string]struct{})
		w.cases = append(w.cases, reflect.SelectCase{Dir: reflect.SelectRecv, Chan: reflect.ValueOf(w.groups[g])})
	}
	w.dir = filepath.Clean(s.botsDir)
	if abs, err := filepath.Abs(s.botsDir); err == nil {
		w.dir = abs
	}
	w.roots = []string{w.dir}
	if real, err := filepath.EvalSymlinks(w.dir); err == nil && real != w.dir {
		w.roots = append(w.roots, real)
	}
	return w
}

// start takes events in and watches the bots folder, before the load lists
// it; run, once the store has loaded, reads the folders that events name
// and watches the folders the load read (armAll). A watch that cannot be
// set is reported: the store then reads those edits at the next Open.
func (w *watcher) start() {
	w.wg.Add(1)
	go w.drain()
	if err := notify.Watch(w.dir, w.root, watchEvents...); err != nil {
		w.cannotWatch(w.dir, err)
	}
}

func (w *watcher) run(items []armItem) {
	w.wg.Add(2)
	go w.work()
	go w.armAll(items)
}

func (w *watcher) cannotWatch(path string, err error) {
	w.mu.Lock()
	first := !w.reported
	w.reported = true
	w.mu.Unlock()
	if first {
		w.s.ReportProblem("", w.s.botsDir, "hand edits of bot files cannot all be followed (a watch on "+path+" failed: "+err.Error()+"): they are read at the next start")
	}
}

func (w *watcher) group(name string) int {
	return int(maphash.String(w.seed, name) % watchGroups)
}

// armFolder watches one bot folder. A folder gone meanwhile is looked at
// instead: it may be a bot removed by hand.
func (w *watcher) armFolder(name string) {
	g := w.group(name)
	path := filepath.Join(w.dir, name)
	if err := notify.Watch(path, w.groups[g], watchEvents...); err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			w.cannotWatch(path, err)
			return
		}
		now := time.Now()
		w.mu.Lock()
		w.mark(name, now, now.Add(w.quiet))
		w.mu.Unlock()
		w.signal()
		return
	}
	w.mu.Lock()
	w.members[g][name] = struct{}{}
	delete(w.stale, name)
	w.mu.Unlock()
}

// armItem is a folder the load read, and the stat of the bot.md it read
// there (zero for none).
type armItem struct {
	name string
	stat fileStat
}

// armAll watches, in the background once the store is open, each folder
// the load read: setting 10,000 watches costs about as much as the load.
// The bots folder was watched before the load listed it, so no folder is
// missed; a bot.md whose stat changed between its read and its folder's
// watch is looked at, so no edit is.
func (w *watcher) armAll(items []armItem) {
	defer w.wg.Done()
	defer close(w.armed)
	for _, it := range items {
		select {
		case <-w.stop:
			return
		default:
		}
		w.armFolder(it.name)
		var st fileStat
		if fi, err := os.Lstat(filepath.Join(w.dir, it.name, fileName)); err == nil {
			st = statOf(fi)
		}
		if st != it.stat {
			now := time.Now()
			w.mu.Lock()
			w.mark(it.name, now, now.Add(w.quiet))
			w.mu.Unlock()
			w.signal()
		}
	}
}

// close stops the watcher's goroutines, waits for them, then drops its
// watches, so that no goroutine of the watcher's can set one after it.
// After it notify sends nothing more on its channels.
func (w *watcher) close() {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	w.closed = true
	w.mu.Unlock()
	close(w.stop)
	w.wg.Wait()
	notify.Stop(w.root)
	for _, c := range w.groups {
		notify.Stop(c)
	}
}

// drain takes notify's events in as fast as they come, so that notify
// never drops one for want of room, and marks the folders they name.
func (w *watcher) drain() {
	defer w.wg.Done()
	for {
		chosen, v, _ := reflect.Select(w.cases)
		if chosen == 0 {
			return
		}
		w.note(v.Interface().(notify.EventInfo))
		if c := w.cases[chosen].Chan; c.Len() > c.Cap()/2 {
			w.mu.Lock()
			w.rescan = true
			w.mu.Unlock()
			w.signal()
		}
	}
}

// split names the bot folder an event path is in, and the file in that
// folder it is about ("" for the folder itself). ok is false for paths
// outside the bots folder's children.
func (w *watcher) split(path string) (name, file string, ok bool) {
	for _, root := range w.roots {
		rel, found := strings.CutPrefix(path, root+string(filepath.Separator))
		if !found {
			continue
		}
		name, file, _ = strings.Cut(rel, string(filepath.Separator))
		if name == "" || strings.ContainsRune(file, filepath.Separator) {
			return "", "", false
		}
		return name, file, true
	}
	return "", "", false
}

// note marks the folder an event is about, when the event can change what
// a read of its bot.md gives, and keeps track of folders made and removed.
func (w *watcher) note(ev notify.EventInfo) {
	name, file, ok := w.split(ev.Path())
	if !ok || atomicfile.IsTemp(name) || (file != "" && file != fileName) {
		return
	}
	now := time.Now()
	w.mu.Lock()
	if file == "" {
		switch ev.Event() {
		case notify.Create:
			w.fresh[name] = struct{}{}
		case notify.Remove, notify.Rename:
			// notify keeps a watch set on a path whose folder went, and
			// sets none on a folder made there again: such a folder's
			// group is set again when it comes.
			if _, ok := w.members[w.group(name)][name]; ok {
				w.stale[name] = struct{}{}
			}
		}
	}
	w.mark(name, now, now.Add(w.quiet))
	w.mu.Unlock()
	w.signal()
}

// mark makes name due at due, after an event at now. w.mu is held.
func (w *watcher) mark(name string, now, due time.Time) {
	p := w.pending[name]
	if p == nil {
		p = &pending{}
		w.pending[name] = p
	}
	p.lastEvent = now
	p.due = due
	p.unsettled = false
	if p.busy {
		p.again = true
	}
}

func (w *watcher) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// work watches the folders that came, reads the folders that are due, one
// at a time, and sleeps until the next is due or an event comes.
func (w *watcher) work() {
	defer w.wg.Done()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	var batch []string
	for {
		w.mu.Lock()
		fresh := w.fresh
		if len(fresh) > 0 {
			w.fresh = make(map[string]struct{})
		}
		rescan := w.rescan
		w.rescan = false
		w.mu.Unlock()
		for name := range fresh {
			w.watchFresh(name)
		}
		if rescan {
			w.markAll()
		}

		now := time.Now()
		var next time.Time
		batch = batch[:0]
		w.mu.Lock()
		for name, p := range w.pending {
			switch {
			case p.busy:
			case !p.due.After(now):
				p.busy = true
				batch = append(batch, name)
			case next.IsZero() || p.due.Before(next):
				next = p.due
			}
		}
		w.mu.Unlock()
		if len(batch) == 0 {
			wait := time.Hour
			if !next.IsZero() {
				wait = time.Until(next)
			}
			timer.Reset(wait) // a timer since Go 1.23 sends nothing stale after Reset
			select {
			case <-w.stop:
				return
			case <-w.wake:
			case <-timer.C:
			}
			continue
		}
		for _, name := range batch {
			select {
			case <-w.stop:
				return
			default:
			}
			w.read(name)
		}
	}
}

// watchFresh watches a folder made or moved into the bots folder: at once
// when notify holds no watch for its path, by setting its group again when
// notify holds a stale one.
func (w *watcher) watchFresh(name string) {
	if atomicfile.IsTemp(name) {
		return
	}
	fi, err := os.Stat(filepath.Join(w.dir, name))
	if err != nil || !fi.IsDir() {
		return
	}
	g := w.group(name)
	w.mu.Lock()
	_, member := w.members[g][name]
	_, stale := w.stale[name]
	w.mu.Unlock()
	switch {
	case !member:
		w.armFolder(name)
	case stale:
		w.rearmGroup(g)
	}
}

// rearmGroup drops every watch of group g and sets again those of its
// folders that are there, then looks at each of them: an event may have
// come while the group was not watched.
func (w *watcher) rearmGroup(g int) {
	w.mu.Lock()
	names := w.members[g]
	w.members[g] = make(map[string]struct{})
	w.mu.Unlock()
	notify.Stop(w.groups[g])
	for name := range names {
		if fi, err := os.Stat(filepath.Join(w.dir, name)); err == nil && fi.IsDir() {
			w.armFolder(name)
		} else {
			w.mu.Lock()
			delete(w.stale, name)
			w.mu.Unlock()
		}
	}
	now := time.Now()
	w.mu.Lock()
	for name := range names {
		w.mark(name, now, now.Add(w.quiet))
	}
	w.mu.Unlock()
}

// read looks at a due folder under its bot's lock and hands the look to
// reconcile. A look that is not taken (a file that does not parse, a
// missing file or folder) is looked at again once the folder has been
// still for watchSettle, and is taken then if the file has not changed
// since the look before.
func (w *watcher) read(name string) {
	unlock := w.s.lock(name)
	l := w.s.lookAt(name)
	now := time.Now()
	w.mu.Lock()
	p := w.pending[name]
	final := p.unsettled && !p.again && now.Sub(p.lastEvent) >= w.settle && p.stat == l.stat
	w.mu.Unlock()
	settled := w.s.reconcile(name, l, final)
	unlock()

	w.mu.Lock()
	defer w.mu.Unlock()
	p.busy = false
	switch {
	case p.again:
		p.again = false // the event set the next due time
	case settled:
		delete(w.pending, name)
	default:
		p.unsettled = true
		p.stat = l.stat
		p.due = p.lastEvent.Add(w.settle)
		if min := now.Add(w.quiet); p.due.Before(min) {
			p.due = min
		}
	}
}

// markAll makes every bot folder, and every bot the store holds, due, and
// watches any folder not watched yet: a look at each after notify may have
// dropped events. A folder whose file the store holds reads as nothing new.
func (w *watcher) markAll() {
	names := map[string]struct{}{}
	if entries, err := os.ReadDir(w.s.botsDir); err == nil {
		for _, d := range entries {
			if !atomicfile.IsTemp(d.Name()) && (d.IsDir() || d.Type()&os.ModeSymlink != 0) {
				names[d.Name()] = struct{}{}
			}
		}
	}
	for name := range names {
		w.watchFresh(name)
	}
	w.s.mu.RLock()
	for id := range w.s.bots {
		names[id] = struct{}{}
	}
	w.s.mu.RUnlock()
	now := time.Now()
	w.mu.Lock()
	for name := range names {
		w.mark(name, now, now.Add(w.quiet))
	}
	w.mu.Unlock()
	w.signal()
}
