package filerecord

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"

	"github.com/agenthost/bots/internal/frontmatter"
)

// readFile reads a bot.md with five system calls (open, fstat, read,
// fstat, close), fewer than os.ReadFile makes: a load of 10,000 bots is
// mostly system calls. It refuses anything but a regular file of at most
// frontmatter.MaxSize bytes, and opens without blocking, so a FIFO named
// bot.md cannot hang a load.
func readFile(path string) ([]byte, fileStat, error) {
	return readFileInto(path, nil)
}

// readFileInto is readFile reading into buf when it has room: a load
// reads every file into the one buffer of its reader.
func readFileInto(path string, buf []byte) ([]byte, fileStat, error) {
	data, st, _, err := readFileKeyed(path, buf)
	return data, st, err
}

// readFileKeyed is readFileInto that also answers the file's cacheKey, as
// its stat gave it before and after the read.
func readFileKeyed(path string, buf []byte) ([]byte, fileStat, cacheKey, error) {
	var fd int
	err := retry(func() (err error) {
		fd, err = syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NONBLOCK, 0)
		return err
	})
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fileStat{}, cacheKey{}, errNoFile
		}
		return nil, fileStat{}, cacheKey{}, fmt.Errorf("the file cannot be read: %w", err)
	}
	defer syscall.Close(fd)
	// A person's editor may rewrite the file in place (truncate, write)
	// while it is read: the bytes could then be the start of one save and
	// the tail of the next, under the stat of neither. The read is taken
	// only when the file's stat is the same after it as before; otherwise
	// it is made again, and a file that keeps changing is refused for now
	// (a watch reads it again once it is still).
	for range readTries {
		var before, after syscall.Stat_t
		if err := retry(func() error { return syscall.Fstat(fd, &before) }); err != nil {
			return nil, fileStat{}, cacheKey{}, fmt.Errorf("the file cannot be read: %w", err)
		}
		if before.Mode&syscall.S_IFMT != syscall.S_IFREG {
			return nil, fileStat{}, cacheKey{}, errNotRegular
		}
		if before.Size > frontmatter.MaxSize {
			return nil, fileStat{}, cacheKey{}, errTooLarge
		}
		data, err := readAllAt(fd, before.Size, buf)
		if err != nil {
			return nil, fileStat{}, cacheKey{}, err
		}
		if err := retry(func() error { return syscall.Fstat(fd, &after) }); err != nil {
			return nil, fileStat{}, cacheKey{}, fmt.Errorf("the file cannot be read: %w", err)
		}
		if before.Size == after.Size && before.Mtim == after.Mtim && before.Ctim == after.Ctim && int64(len(data)) == after.Size {
			return data, fileStat{ino: before.Ino, size: before.Size, mtime: before.Mtim.Nano()}, keyOf(&before), nil
		}
	}
	return nil, fileStat{}, cacheKey{}, errChanging
}

// readTries is how many times readFile reads a file that changes while it
// is read before it gives up.
const readTries = 3

// readAllAt reads the whole file from its start into buf (or a new
// buffer when buf has no room), size the size its stat gave, asking for a
// byte beyond it: a short read is the end of the file. (A short read that
// is not, as a network file system may give, is caught by the caller's
// comparison of the bytes read with the size the second stat gives.)
func readAllAt(fd int, size int64, buf []byte) ([]byte, error) {
	data := buf[:0]
	if int64(cap(data)) < size+1 {
		data = make([]byte, 0, size+1)
	}
	data = data[:size+1]
	n := 0
	for {
		var m int
		err := retry(func() (err error) {
			m, err = syscall.Pread(fd, data[n:], int64(n))
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("the file cannot be read: %w", err)
		}
		if m <= 0 {
			break
		}
		n += m
		if n > frontmatter.MaxSize {
			return nil, errTooLarge
		}
		if n < len(data) {
			break
		}
		data = append(data, make([]byte, len(data))...)
	}
	return data[:n], nil
}

func retry(call func() error) error {
	for {
		if err := call(); err != syscall.EINTR {
			return err
		}
	}
}

// statOf gives what an etag takes from a file the store just wrote.
func statOf(fi os.FileInfo) fileStat {
	st := fileStat{size: fi.Size(), mtime: fi.ModTime().UnixNano()}
	if sys, ok := fi.Sys().(*syscall.Stat_t); ok {
		st.ino = sys.Ino
	}
	return st
}

// keyOf is the cacheKey of a file's stat.
func keyOf(st *syscall.Stat_t) cacheKey {
	return cacheKey{dev: uint64(st.Dev), ino: st.Ino, size: st.Size, mtime: st.Mtim.Nano(), ctime: st.Ctim.Nano()}
}

// statKey is the cacheKey of the regular file at path, with one system
// call; ok is false when path names no regular file, or cannot be
// looked at.
func statKey(path string) (k cacheKey, ok bool) {
	var st syscall.Stat_t
	if err := retry(func() error { return syscall.Stat(path, &st) }); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return cacheKey{}, false
	}
	return keyOf(&st), true
}
