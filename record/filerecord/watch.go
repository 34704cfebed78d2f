package filerecord

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/agenthost/bots/internal/atomicfile"
	"github.com/agenthost/bots/record"
)

// How the watch waits for a save to be done.
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
)

// evKind is what an event says happened to a path in the bots folder.
type evKind int

const (
	evCreate evKind = iota // made, or renamed into its folder
	evRemove               // removed
	evWrite                // written or truncated in place
	evRename               // renamed out of its folder (or the folder itself)
)

// folderWatch is what sets the system's watches for a watcher and hands
// their events to it (watcher.note, watcher.overflow): inotify on Linux,
// with one descriptor for every folder (watch_linux.go), the notify library
// elsewhere (watch_notify.go).
type folderWatch interface {
	// watchRoot watches the bots folder itself, for folders made, removed
	// and renamed, and starts handing events over.
	watchRoot() error
	// watchFolder watches one bot folder, for its bot.md; an error that is
	// fs.ErrNotExist says the folder is gone.
	watchFolder(name string) error
	// folderMade watches a folder made or moved into the bots folder, as
	// its watch of the folder before it (if any) requires.
	folderMade(name string)
	// queued answers whether events have come that were not handed over
	// yet.
	queued() bool
	// close drops every watch and stops handing events over; it waits
	// for its goroutines. The watcher's own have stopped before it.
	close()
}

// watcher follows hand edits of <configDir>/bots/: the bots folder itself,
// for bot folders made, removed and renamed, and each bot folder, for its
// bot.md. A bot's sessions/ and logs/ are not watched: the store reads
// nothing there, and a chat log grows at every turn.
//
// Events are only hints of which bot's folder changed: after a quiet spell
// the folder is read, under the bot's lock, and reconcile decides what the
// file holds.
type watcher struct {
	s      *Store
	dir    string   // the bots folder, absolute, as watches are set on it
	roots  []string // the bots folder as events may name it
	fw     folderWatch
	stop   chan struct{}
	armed  chan struct{} // closed when armAll is done
	wake   chan struct{} // capacity 1: there is work
	wg     sync.WaitGroup
	quiet  time.Duration
	settle time.Duration

	mu       sync.Mutex
	pending  map[string]*pending // folder name → what waits to be read
	fresh    map[string]struct{} // folders made or moved in, to watch
	rescan   bool                // look at every folder again
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
		stop:    make(chan struct{}),
		armed:   make(chan struct{}),
		wake:    make(chan struct{}, 1),
		quiet:   watchQuiet,
		settle:  watchSettle,
		pending: make(map[string]*pending),
		fresh:   make(map[string]struct{}),
	}
	w.dir = filepath.Clean(s.botsDir)
	if abs, err := filepath.Abs(s.botsDir); err == nil {
		w.dir = abs
	}
	w.roots = []string{w.dir}
	if real, err := filepath.EvalSymlinks(w.dir); err == nil && real != w.dir {
		w.roots = append(w.roots, real)
	}
	w.fw = newFolderWatch(w)
	return w
}

// start takes events in and watches the bots folder, before the load lists
// it; run, once the store has loaded, reads the folders that events name
// and watches the folders the load read (armAll). A watch that cannot be
// set is reported: the store then reads those edits at the next Open.
func (w *watcher) start() {
	if err := w.fw.watchRoot(); err != nil {
		w.cannotWatch(w.dir, err)
	}
}

// run starts following the events, and watches each folder of items in
// the background (armAll) once after is closed (at once for nil), then
// runs then (when not nil) on the same goroutine, which ends with it.
func (w *watcher) run(after <-chan struct{}, items []armItem, then func()) {
	w.wg.Add(2)
	go w.work()
	go func() {
		defer w.wg.Done()
		stopped := false
		if after != nil {
			select {
			case <-after:
			case <-w.s.stop: // the store closes: it waits for then
				stopped = true
			case <-w.stop:
				stopped = true
			}
		}
		if stopped {
			close(w.armed)
		} else {
			w.armAll(items)
		}
		if then != nil {
			then()
		}
	}()
}

func (w *watcher) cannotWatch(path string, err error) {
	w.mu.Lock()
	first := !w.reported && !w.closed
	w.reported = true
	w.mu.Unlock()
	if first {
		w.s.ReportProblem("", w.s.botsDir, "hand edits of bot files cannot all be followed (a watch on "+path+" failed: "+err.Error()+"): they are read at the next start")
	}
}

// armFolder watches one bot folder. A folder gone meanwhile is looked at
// instead: it may be a bot removed by hand.
func (w *watcher) armFolder(name string) {
	if err := w.fw.watchFolder(name); err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			w.cannotWatch(filepath.Join(w.dir, name), err)
			return
		}
		now := time.Now()
		w.mu.Lock()
		w.mark(name, now, now.Add(w.quiet))
		w.mu.Unlock()
		w.signal()
	}
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
	w.fw.close()
}

// note marks the folder an event is about, when the event can change what
// a read of its bot.md gives, and keeps track of folders made: name is the
// bot folder, file the file in it the event is about ("" for the folder).
func (w *watcher) note(name, file string, kind evKind) {
	if atomicfile.IsTemp(name) || (file != "" && file != fileName) {
		return
	}
	now := time.Now()
	w.mu.Lock()
	if file == "" && kind == evCreate {
		w.fresh[name] = struct{}{}
	}
	w.mark(name, now, now.Add(w.quiet))
	w.mu.Unlock()
	w.signal()
}

// overflow makes the watcher look at every folder again: events were
// dropped.
func (w *watcher) overflow() {
	w.mu.Lock()
	w.rescan = true
	w.mu.Unlock()
	w.signal()
}

// markNames makes the named folders due: a look at each, after a spell in
// which their events may have been missed.
func (w *watcher) markNames(names map[string]struct{}) {
	now := time.Now()
	w.mu.Lock()
	for name := range names {
		w.mark(name, now, now.Add(w.quiet))
	}
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
		var fresh map[string]struct{} // taken whole, so note never writes the map read below
		if len(w.fresh) > 0 {
			fresh, w.fresh = w.fresh, make(map[string]struct{})
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

// watchFresh watches a folder made or moved into the bots folder.
func (w *watcher) watchFresh(name string) {
	if atomicfile.IsTemp(name) {
		return
	}
	fi, err := os.Stat(filepath.Join(w.dir, name))
	if err != nil || !fi.IsDir() {
		return
	}
	w.fw.folderMade(name)
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
// watches any folder not watched yet: a look at each after the system may
// have dropped events. A folder whose file the store holds reads as nothing new.
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
	w.s.bots.Each(func(e *record.Entry) bool {
		names[e.Record.ID] = struct{}{}
		return true
	})
	w.s.mu.RUnlock()
	w.markNames(names)
}
