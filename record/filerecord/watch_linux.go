package filerecord

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The inotify events the watch asks for: a bot folder's children made,
// removed, renamed in or out, written in place; the folder itself removed
// or renamed. The bots folder asks only for its children.
const (
	rootMask   = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_ONLYDIR
	folderMask = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MODIFY | unix.IN_MOVED_FROM | unix.IN_MOVED_TO |
		unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR
)

// inotifyWatch watches with one inotify descriptor for the bots folder and
// every bot folder in it: a watch is one system call to set, a map entry to
// name, and nothing to drop (closing the descriptor drops them all), so
// 100,000 watched bots cost what 100 do at each event, and Close does not
// grow with them. One goroutine reads the descriptor, through the runtime's
// poller, so that closing the descriptor ends its read.
type inotifyWatch struct {
	w       *watcher
	done    chan struct{} // closed when read returns
	reading atomic.Bool   // events read and not yet handed over

	mu     sync.Mutex
	f      *os.File // nil until watchRoot, and after close
	fd     int
	root   int32            // the bots folder's watch
	names  map[int32]string // a bot folder's watch → its name
	wds    map[string]int32 // a bot folder's name → its watch
	closed bool
}

func newFolderWatch(w *watcher) folderWatch {
	return &inotifyWatch{
		w:     w,
		done:  make(chan struct{}),
		root:  -1,
		names: make(map[int32]string),
		wds:   make(map[string]int32),
	}
}

func (in *inotifyWatch) watchRoot() error {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		close(in.done)
		return fmt.Errorf("inotify: %w", err)
	}
	in.mu.Lock()
	in.f, in.fd = os.NewFile(uintptr(fd), "inotify"), fd
	wd, err := unix.InotifyAddWatch(fd, in.w.dir, rootMask)
	if err == nil {
		in.root = int32(wd)
	}
	in.mu.Unlock()
	go in.read()
	return watchErr(err)
}

// watchErr says why a watch could not be set; a folder gone is
// fs.ErrNotExist.
func watchErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.ENOENT), errors.Is(err, unix.ENOTDIR):
		return fs.ErrNotExist
	case errors.Is(err, unix.ENOSPC):
		return errors.New("the system's limit of inotify watches is reached (raise fs.inotify.max_user_watches)")
	}
	return err
}

func (in *inotifyWatch) watchFolder(name string) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.closed || in.f == nil {
		return nil
	}
	// Under in.mu, so that read cannot take an event of the new watch
	// before its name is kept.
	wd, err := unix.InotifyAddWatch(in.fd, filepath.Join(in.w.dir, name), folderMask)
	if err != nil {
		return watchErr(err)
	}
	if old, ok := in.wds[name]; ok && old != int32(wd) {
		delete(in.names, old)
	}
	in.names[int32(wd)] = name
	in.wds[name] = int32(wd)
	return nil
}

// folderMade sets the folder's watch: a watch set again on the same
// folder is the same watch, and the watch of a folder removed or moved
// away was dropped when its event came (see take).
func (in *inotifyWatch) folderMade(name string) { in.w.armFolder(name) }

func (in *inotifyWatch) queued() bool {
	if in.reading.Load() {
		return true
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.f == nil || in.closed {
		return false
	}
	n, err := unix.IoctlGetInt(in.fd, unix.TIOCINQ) // FIONREAD: bytes of events not read
	return err == nil && n > 0
}

// close closes the descriptor, which drops every watch and ends read, and
// waits for read.
func (in *inotifyWatch) close() {
	in.mu.Lock()
	in.closed = true
	f := in.f
	in.f = nil
	in.mu.Unlock()
	if f != nil {
		f.Close()
	}
	<-in.done
}

// note is one event to hand to the watcher.
type inotifyNote struct {
	name, file string
	kind       evKind
}

// read reads events until the descriptor is closed, and hands each batch to
// the watcher.
func (in *inotifyWatch) read() {
	defer close(in.done)
	in.mu.Lock()
	f := in.f
	in.mu.Unlock()
	if f == nil {
		return
	}
	buf := make([]byte, 64<<10)
	var notes []inotifyNote
	for {
		n, err := f.Read(buf)
		if err != nil {
			if !errors.Is(err, os.ErrClosed) && !errors.Is(err, fs.ErrClosed) {
				in.w.cannotWatch(in.w.dir, err)
			}
			return
		}
		in.reading.Store(true)
		var overflow bool
		notes, overflow = in.take(buf[:n], notes[:0])
		for _, nt := range notes {
			in.w.note(nt.name, nt.file, nt.kind)
		}
		if overflow {
			in.w.overflow()
		}
		in.reading.Store(false)
	}
}

// take reads the events in buf and keeps the watches' names up to date:
// a folder removed or moved away loses its watch (and a folder made there
// again gets a watch of its own when its event comes, see folderMade). It
// answers the events for the watcher, and whether the kernel dropped some.
func (in *inotifyWatch) take(buf []byte, notes []inotifyNote) ([]inotifyNote, bool) {
	overflow := false
	in.mu.Lock()
	defer in.mu.Unlock()
	for len(buf) >= unix.SizeofInotifyEvent {
		ev := (*unix.InotifyEvent)(unsafe.Pointer(&buf[0]))
		end := unix.SizeofInotifyEvent + int(ev.Len)
		if end > len(buf) {
			break
		}
		raw := buf[unix.SizeofInotifyEvent:end]
		if i := bytes.IndexByte(raw, 0); i >= 0 {
			raw = raw[:i]
		}
		child := string(raw)
		buf = buf[end:]
		mask := ev.Mask
		if mask&unix.IN_Q_OVERFLOW != 0 {
			overflow = true
			continue
		}
		if ev.Wd == in.root {
			if child == "" {
				continue // the bots folder itself: nothing to read
			}
			var kind evKind
			switch {
			case mask&(unix.IN_CREATE|unix.IN_MOVED_TO) != 0:
				kind = evCreate
			case mask&unix.IN_DELETE != 0:
				kind = evRemove
				in.forget(child, false)
			case mask&unix.IN_MOVED_FROM != 0:
				// A folder moved away keeps its watch, wherever it went.
				kind = evRename
				in.forget(child, true)
			default:
				continue
			}
			notes = append(notes, inotifyNote{name: child, kind: kind})
			continue
		}
		name, ok := in.names[ev.Wd]
		if !ok {
			continue // a watch dropped already
		}
		switch {
		case mask&unix.IN_IGNORED != 0:
			// The folder is gone and the kernel dropped its watch.
			delete(in.names, ev.Wd)
			if in.wds[name] == ev.Wd {
				delete(in.wds, name)
			}
			notes = append(notes, inotifyNote{name: name, kind: evRemove})
		case mask&unix.IN_MOVE_SELF != 0:
			in.forget(name, true)
			notes = append(notes, inotifyNote{name: name, kind: evRename})
		case mask&unix.IN_DELETE_SELF != 0:
			notes = append(notes, inotifyNote{name: name, kind: evRemove})
		default:
			kind := evWrite
			switch {
			case mask&(unix.IN_CREATE|unix.IN_MOVED_TO) != 0:
				kind = evCreate
			case mask&unix.IN_DELETE != 0:
				kind = evRemove
			case mask&unix.IN_MOVED_FROM != 0:
				kind = evRename
			}
			notes = append(notes, inotifyNote{name: name, file: child, kind: kind})
		}
	}
	return notes, overflow
}

// forget drops the name of a bot folder's watch, and with drop the watch
// itself (a folder moved away keeps it). in.mu is held.
func (in *inotifyWatch) forget(name string, drop bool) {
	wd, ok := in.wds[name]
	if !ok {
		return
	}
	delete(in.wds, name)
	delete(in.names, wd)
	if drop && !in.closed && in.f != nil {
		unix.InotifyRmWatch(in.fd, uint32(wd))
	}
}
