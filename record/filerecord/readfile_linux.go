package filerecord

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"

	"github.com/agenthost/bots/internal/frontmatter"
)

// readFile reads a bot.md with four system calls (open, fstat, read,
// close), where os.ReadFile makes about twice as many: a load of 10,000
// bots is mostly system calls. It refuses anything but a regular file of at
// most frontmatter.MaxSize bytes, and opens without blocking, so a FIFO
// named bot.md cannot hang a load.
func readFile(path string) ([]byte, fileStat, error) {
	var fd int
	err := retry(func() (err error) {
		fd, err = syscall.Open(path, syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NONBLOCK, 0)
		return err
	})
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fileStat{}, errNoFile
		}
		return nil, fileStat{}, fmt.Errorf("the file cannot be read: %w", err)
	}
	defer syscall.Close(fd)
	var st syscall.Stat_t
	if err := retry(func() error { return syscall.Fstat(fd, &st) }); err != nil {
		return nil, fileStat{}, fmt.Errorf("the file cannot be read: %w", err)
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return nil, fileStat{}, errNotRegular
	}
	if st.Size > frontmatter.MaxSize {
		return nil, fileStat{}, errTooLarge
	}
	// One byte more than the size: a short read is the end of the file.
	data := make([]byte, st.Size+1)
	n := 0
	for {
		var m int
		err := retry(func() (err error) {
			m, err = syscall.Read(fd, data[n:])
			return err
		})
		if err != nil {
			return nil, fileStat{}, fmt.Errorf("the file cannot be read: %w", err)
		}
		if m <= 0 {
			break
		}
		n += m
		if n > frontmatter.MaxSize {
			return nil, fileStat{}, errTooLarge
		}
		if n == len(data) {
			data = append(data, make([]byte, len(data))...)
		}
	}
	return data[:n], fileStat{ino: st.Ino, size: st.Size, mtime: st.Mtim.Nano()}, nil
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
