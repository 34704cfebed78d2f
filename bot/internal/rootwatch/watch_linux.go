//go:build linux

// Package rootwatch spares the bot service's folder checks a look at each
// path under root while nothing it depends on has changed, and keeps the
// identity of the AGENTS.md files it answers for: epoll over inotify and
// the mount table, on Linux. Elsewhere every check looks at the path.
package rootwatch

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/agenthost/bots/persona"
)

// Watch spares a folder check the look at <root>/<name> - that it is
// no symbolic link - while nothing that look depends on has changed since
// it was last made: the entry name in root, root's own entry in its parent
// and every entry the kernel passes through to reach root (following
// links, as a path walk does), and the mounts. The kernel queues an
// inotify event (or marks the mount table changed) before the call that
// made a change returns, and every check asks the kernel whether anything
// is queued, with one epoll_wait that does not wait: a check that starts
// after a folder was swapped for a link sees the swap, as a look at the
// path would. Anything it cannot follow (a queue overflow, an error) makes
// it forget all it knew, or give up: a check then looks at the path, as
// without it.
//
// It also holds open the AGENTS.md of bots it answers for (Identify),
// while a watch of their folder says the name is unchanged, and keeps the
// file's identity while a watch of the file itself says nothing changed
// it, through any of its names: a read of an unchanged persona then makes
// no system call but the epoll_wait.
//
// It is started on first use and holds three descriptors (epoll, inotify,
// /proc/self/mountinfo), one inotify watch per folder on the way to root,
// and a descriptor and two watches per AGENTS.md held (at most MaxHeld);
// Close gives them back.
type Watch struct {
	root string

	mu      sync.Mutex
	started bool
	ep      int // epoll over in and mounts; -1 when not watching
	in      int
	mounts  int
	dirs    map[int32]watchedDir // by watch descriptor
	good    map[string]struct{}  // names under root found no link since
	held    map[string]heldFile  // by name under root: its AGENTS.md, held open
	gen     uint64               // counts the times events were taken
	frozen  int                  // passes under way that take no events (freeze)
	buf     []byte
}

// watchedDir is a watched folder's names that matter: all of them in
// root, the next one on the way to root elsewhere, and AGENTS.md in the
// folder of bot (a name under root); or, with file, bot's AGENTS.md
// itself.
type watchedDir struct {
	all   bool
	names map[string]struct{}
	bot   string
	file  bool
}

// heldFile is a bot's AGENTS.md held open (O_PATH) while its folder is
// watched: while no event says the name AGENTS.md changed in the folder,
// it is the file the path names, and its identity is an fstat away. While
// the file's own watch (fileWd, -1 when it has none) says nothing changed
// it, its identity is id, taken once (idOK).
type heldFile struct {
	fd     int
	wd     int32
	fileWd int32
	id     persona.Identity
	idOK   bool
}

// fileEvents are the changes to a file, through any of its names, that
// change its content or identity.
const fileEvents = unix.IN_MODIFY | unix.IN_ATTRIB | unix.IN_CLOSE_WRITE | unix.IN_MOVE_SELF | unix.IN_DELETE_SELF

// MaxHeld bounds the AGENTS.md files held open, a descriptor and two
// watches each; when full, an arbitrary one is let go.
const MaxHeld = 256

const (
	// entryEvents are the changes to a folder's entries that can change
	// what one of its names leads to.
	entryEvents = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO
	// selfEvents are a watched folder going away from where it was.
	selfEvents = unix.IN_MOVE_SELF | unix.IN_DELETE_SELF | unix.IN_IGNORED | unix.IN_UNMOUNT
	// maxHops bounds the links followed on the way to root, as the
	// kernel does (ELOOP).
	maxHops = 40
)

// New is the watch of the folders under root; it starts on first use.
func New(root string) *Watch {
	return &Watch{root: root, ep: -1, in: -1, mounts: -1}
}

// Known reports whether name, directly under root, was found no link and
// nothing it depends on changed since; gen is to give Remember after a
// look at the path.
func (w *Watch) Known(name string) (ok bool, gen uint64) {
	if w == nil {
		return false, 0
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.knownLocked(name)
}

// knownLocked is known, called with mu held.
func (w *Watch) knownLocked(name string) (ok bool, gen uint64) {
	if !w.started {
		w.started = true
		w.start()
	}
	if w.ep < 0 {
		return false, 0
	}
	if w.frozen == 0 {
		w.takeEvents()
		if w.ep < 0 {
			return false, 0
		}
	}
	_, ok = w.good[name]
	return ok, w.gen
}

// Freeze makes Known answer from what the watch has taken, with no look
// at what changed, until thaw is called: one look serves a pass over
// every bot (the guard's at load: 100,000 epoll_waits at 100,000 bots)
// instead of one per bot. The pass answers as of its start: a change
// made meanwhile is taken at the first look after thaw, so a later
// check sees it as it would a change made just after the pass. Every
// Known answers so while frozen: it is for a pass nothing else checks
// beside (bot.New's, before the service serves).
func (w *Watch) Freeze() (thaw func()) {
	if w == nil {
		return func() {}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.started {
		w.started = true
		w.start()
	}
	if w.ep >= 0 {
		w.takeEvents()
	}
	w.frozen++
	return sync.OnceFunc(func() {
		w.mu.Lock()
		w.frozen--
		w.mu.Unlock()
	})
}

// Remember records that name, directly under root, was found no link by
// a look at the path that started after Known gave gen: it holds unless
// an event was taken meanwhile, which may have been about that name.
func (w *Watch) Remember(name string, gen uint64) {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ep >= 0 && gen == w.gen {
		w.good[name] = struct{}{}
	}
}

// LearnRoot reads root's entries once and remembers each folder among
// them as no link, as a look at <root>/<name> would (Remember): the
// guard's check of every bot at a start then costs one listing of root,
// not one Lstat a bot. What changes from the moment it starts listing is
// queued as events, which the next check takes (and forgets the names
// they touch), as after any look at the path. An entry whose type the
// listing does not give is looked at by os.File.ReadDir itself (Lstat).
func (w *Watch) LearnRoot() {
	if w == nil {
		return
	}
	w.mu.Lock()
	if !w.started {
		w.started = true
		w.start()
	}
	if w.ep >= 0 {
		w.takeEvents()
	}
	if w.ep < 0 {
		w.mu.Unlock()
		return
	}
	gen := w.gen
	w.mu.Unlock()
	f, err := os.Open(w.root)
	if err != nil {
		return
	}
	ents, err := f.ReadDir(-1) // unsorted, unlike os.ReadDir
	f.Close()
	if err != nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ep < 0 || gen != w.gen {
		return
	}
	if len(w.good) == 0 {
		w.good = make(map[string]struct{}, len(ents)) // grown once, not step by step
	}
	for _, e := range ents {
		if e.Type().IsDir() {
			w.good[e.Name()] = struct{}{}
		}
	}
}

// Close gives the descriptors back; checks then look at the path.
func (w *Watch) Close() {
	if w == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.started = true
	w.stop()
}

// start opens the descriptors and sets the watches; on any failure it
// stops, and checks look at the path.
func (w *Watch) start() {
	var err error
	if w.ep, err = unix.EpollCreate1(unix.EPOLL_CLOEXEC); err != nil {
		w.ep = -1
		return
	}
	if w.mounts, err = unix.Open("/proc/self/mountinfo", unix.O_RDONLY|unix.O_CLOEXEC, 0); err != nil {
		w.mounts = -1
		w.stop()
		return
	}
	// mountinfo is always readable; a change to the mounts is EPOLLPRI.
	if err := unix.EpollCtl(w.ep, unix.EPOLL_CTL_ADD, w.mounts, &unix.EpollEvent{Events: unix.EPOLLPRI, Fd: int32(w.mounts)}); err != nil {
		w.stop()
		return
	}
	w.buf = make([]byte, 4096)
	w.rewatch()
}

// rewatch forgets what it knew and sets the watches afresh, on a new
// inotify descriptor.
func (w *Watch) rewatch() {
	w.gen++
	w.dropHeld()
	w.good = make(map[string]struct{})
	w.dirs = make(map[int32]watchedDir)
	if w.in >= 0 {
		unix.Close(w.in) // leaves the epoll set with it
		w.in = -1
	}
	var err error
	if w.in, err = unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC); err != nil {
		w.in = -1
		w.stop()
		return
	}
	if err := unix.EpollCtl(w.ep, unix.EPOLL_CTL_ADD, w.in, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(w.in)}); err != nil {
		w.stop()
		return
	}
	if err := w.watchWay(); err != nil {
		w.stop()
	}
}

func (w *Watch) stop() {
	w.dropHeld()
	for _, fd := range []*int{&w.in, &w.mounts, &w.ep} {
		if *fd >= 0 {
			unix.Close(*fd)
			*fd = -1
		}
	}
	w.good, w.dirs = nil, nil
}

// dropHeld closes every AGENTS.md held; their watches go with the inotify
// descriptor they were set on, which the caller closes.
func (w *Watch) dropHeld() {
	for _, h := range w.held {
		unix.Close(h.fd)
	}
	w.held = nil
}

// drop closes the AGENTS.md held for name, if any, and its watch.
func (w *Watch) drop(name string) {
	h, ok := w.held[name]
	if !ok {
		return
	}
	delete(w.held, name)
	delete(w.dirs, h.wd)
	unix.Close(h.fd)
	unix.InotifyRmWatch(w.in, uint32(h.wd)) // its IN_IGNORED is then ignored
	if h.fileWd >= 0 {
		delete(w.dirs, h.fileWd)
		unix.InotifyRmWatch(w.in, uint32(h.fileWd))
	}
}

// Identify is persona's Config.Identify: the identity of <root>/<name>/
// AGENTS.md, when name is known to be no link, from an fstat of the file
// held open while no event says its name changed; false otherwise (the
// persona reader then lstats the path).
func (w *Watch) Identify(path string) (persona.Identity, bool) {
	if w == nil {
		return persona.Identity{}, false
	}
	rest, ok := strings.CutPrefix(path, w.root)
	if !ok || w.root == "/" {
		return persona.Identity{}, false
	}
	name, ok := strings.CutSuffix(rest, "/"+persona.AgentsFile)
	if !ok || len(name) < 2 || name[0] != '/' || strings.IndexByte(name[1:], '/') >= 0 {
		return persona.Identity{}, false
	}
	name = name[1:]
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ep < 0 {
		return persona.Identity{}, false
	}
	w.takeEvents()
	if _, good := w.good[name]; !good || w.ep < 0 {
		return persona.Identity{}, false
	}
	return w.identityLocked(name, path)
}

// KnownIdentity is Known and then Identify, for <root>/<name> and its
// AGENTS.md, from one look at what changed (one epoll_wait, not one each):
// ok as Known answers; and when ok, the identity of <root>/<name>/
// AGENTS.md as Identify answers it at that moment (idOK false when it
// cannot: the persona reader then lstats the path).
func (w *Watch) KnownIdentity(name string) (ok bool, gen uint64, id persona.Identity, idOK bool) {
	if w == nil {
		return false, 0, persona.Identity{}, false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if ok, gen = w.knownLocked(name); !ok || w.root == "/" {
		return ok, gen, persona.Identity{}, false
	}
	id, idOK = w.identityLocked(name, "")
	return ok, gen, id, idOK
}

// identityLocked is identify's answer for name, known to be no link, and
// its AGENTS.md at path ("" for <root>/<name>/AGENTS.md). Called with mu
// held, right after events were taken.
func (w *Watch) identityLocked(name, path string) (persona.Identity, bool) {
	h, ok := w.held[name]
	if !ok {
		if path == "" {
			path = w.root + "/" + name + "/" + persona.AgentsFile
		}
		if h, ok = w.hold(name, path); !ok {
			return persona.Identity{}, false
		}
	}
	if h.idOK && w.frozen == 0 { // events were just taken: none let it go
		return h.id, true
	}
	var st unix.Stat_t
	if err := unix.Fstat(h.fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		return persona.Identity{}, false
	}
	id := persona.Identity{
		Dev:   uint64(st.Dev),
		Ino:   uint64(st.Ino),
		Size:  int64(st.Size),
		Mtime: st.Mtim.Nano(),
		Ctime: st.Ctim.Nano(),
	}
	if h.fileWd >= 0 {
		// taken after the file's watch was set: a change from here on
		// is an event, which lets the file go (apply).
		h.id, h.idOK = id, true
		w.held[name] = h
	}
	return id, true
}

// hold watches the folder <root>/<name>, then opens its AGENTS.md: a
// change to the name after the watch is set is an event.
func (w *Watch) hold(name, path string) (heldFile, bool) {
	if len(w.held) >= MaxHeld {
		for other := range w.held {
			w.drop(other)
			break
		}
	}
	wd, err := unix.InotifyAddWatch(w.in, filepath.Dir(path), entryEvents|unix.IN_MOVE_SELF|unix.IN_DELETE_SELF|unix.IN_ONLYDIR|unix.IN_DONT_FOLLOW)
	if err != nil {
		return heldFile{}, false
	}
	if _, taken := w.dirs[int32(wd)]; taken {
		return heldFile{}, false // the folder is also on the way to root
	}
	w.dirs[int32(wd)] = watchedDir{bot: name}
	fd, err := unix.Open(path, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		delete(w.dirs, int32(wd))
		unix.InotifyRmWatch(w.in, uint32(wd))
		return heldFile{}, false
	}
	if w.held == nil {
		w.held = make(map[string]heldFile)
	}
	h := heldFile{fd: fd, wd: int32(wd), fileWd: -1}
	// The file the descriptor holds, whatever its names: not the path,
	// which may name another file by now.
	if fwd, err := unix.InotifyAddWatch(w.in, "/proc/self/fd/"+strconv.Itoa(fd), fileEvents); err == nil {
		if _, taken := w.dirs[int32(fwd)]; !taken { // else a file another bot holds too: fstat each time
			h.fileWd = int32(fwd)
			w.dirs[h.fileWd] = watchedDir{bot: name, file: true}
		}
	}
	w.held[name] = h
	return h, true
}

// watchWay watches every folder a walk to root passes through, for the
// name it takes there, following links as the kernel would; root itself
// for every name. A part that does not exist yet is watched for in the
// folder that would hold it.
func (w *Watch) watchWay() error {
	queue := strings.Split(w.root, "/")
	cur, hops := "/", 0
	for len(queue) > 0 {
		c := queue[0]
		queue = queue[1:]
		switch c {
		case "", ".":
			continue
		case "..": // cur has no link in it: its parent is lexical
			cur = filepath.Dir(cur)
			continue
		}
		if err := w.watch(cur, c); err != nil {
			return err
		}
		next := filepath.Join(cur, c)
		var st unix.Stat_t
		if err := unix.Lstat(next, &st); err != nil {
			if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
				return nil // its making is watched for
			}
			return err
		}
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFLNK:
			if hops++; hops > maxHops {
				return unix.ELOOP
			}
			target, err := os.Readlink(next)
			if err != nil {
				return err
			}
			if filepath.IsAbs(target) {
				cur = "/"
			}
			queue = append(strings.Split(target, "/"), queue...)
		case unix.S_IFDIR:
			cur = next
		default:
			return nil // no folder: its replacing is watched for
		}
	}
	return w.watch(cur, "")
}

// watch watches folder dir for changes to name, or to every name when
// name is "".
func (w *Watch) watch(dir, name string) error {
	wd, err := unix.InotifyAddWatch(w.in, dir, entryEvents|unix.IN_MOVE_SELF|unix.IN_DELETE_SELF|unix.IN_ONLYDIR|unix.IN_DONT_FOLLOW|unix.IN_MASK_ADD)
	if err != nil {
		return err
	}
	d := w.dirs[int32(wd)]
	if name == "" {
		d.all = true
	} else {
		if d.names == nil {
			d.names = make(map[string]struct{})
		}
		d.names[name] = struct{}{}
	}
	w.dirs[int32(wd)] = d
	return nil
}

// takeEvents asks the kernel, without waiting, whether anything changed,
// and takes what did into account.
func (w *Watch) takeEvents() {
	var evs [2]unix.EpollEvent
	n, _, errno := syscall.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(w.ep), uintptr(unsafe.Pointer(&evs[0])), uintptr(len(evs)), 0, 0, 0)
	if errno == unix.EINTR {
		n, errno = 1, 0 // as if something changed: look
		evs[0].Fd = int32(w.in)
	}
	if errno != 0 {
		w.stop()
		return
	}
	if n == 0 {
		return
	}
	w.gen++
	reset := false
	for _, ev := range evs[:n] {
		if ev.Fd == int32(w.mounts) {
			reset = true
		}
	}
	for !reset {
		m, err := unix.Read(w.in, w.buf)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			// all taken
		case err != nil || m <= 0:
			reset = true
		default:
			reset = w.apply(w.buf[:m])
			continue
		}
		break
	}
	if reset {
		w.rewatch()
	}
}

// apply takes the events in b into account; true when what it knew must
// all be forgotten and the watches set again.
func (w *Watch) apply(b []byte) (reset bool) {
	for len(b) >= unix.SizeofInotifyEvent {
		ev := (*unix.InotifyEvent)(unsafe.Pointer(&b[0]))
		end := unix.SizeofInotifyEvent + int(ev.Len)
		if end > len(b) {
			return true
		}
		name := b[unix.SizeofInotifyEvent:end]
		if i := bytes.IndexByte(name, 0); i >= 0 {
			name = name[:i]
		}
		b = b[end:]
		if ev.Mask&unix.IN_Q_OVERFLOW != 0 {
			return true
		}
		d, ok := w.dirs[ev.Wd]
		switch {
		case !ok:
			// a watch of an earlier descriptor, or one dropped
		case d.file:
			w.drop(d.bot) // the file changed: held again, fstat again, at the next look
		case d.bot != "":
			if ev.Mask&selfEvents != 0 || string(name) == persona.AgentsFile {
				w.drop(d.bot)
			}
		case ev.Mask&selfEvents != 0:
			reset = true
		case d.all:
			delete(w.good, string(name))
			w.drop(string(name))
		default:
			if _, ok := d.names[string(name)]; ok {
				reset = true
			}
		}
	}
	return reset
}

// Held is how many AGENTS.md files w holds open (at most MaxHeld).
func (w *Watch) Held() int {
	if w == nil {
		return 0
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.held)
}

// KeepsIdentity reports whether w holds the AGENTS.md of the folder name,
// directly under root, and keeps its identity: nothing changed it since
// it was taken.
func (w *Watch) KeepsIdentity(name string) bool {
	if w == nil {
		return false
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.held[name].idOK
}
