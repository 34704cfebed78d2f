//go:build unix

package jsonl

import (
	"os"
	"syscall"
)

// openAppend opens the log at path for appending, without making it.
// os.OpenFile would offer a regular file to the network poller, which
// refuses it, and set and reset its non-blocking flag on the way: four
// fcntl calls and a poller descriptor on every append, some 14 appends a
// chat turn. A descriptor opened here and handed to os.NewFile is taken as
// the blocking file it is, with one fcntl.
func openAppend(path string) (*os.File, error) {
	for {
		fd, err := syscall.Open(path, syscall.O_WRONLY|syscall.O_APPEND|syscall.O_CLOEXEC, 0)
		if err == syscall.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "open", Path: path, Err: err}
		}
		return os.NewFile(uintptr(fd), path), nil
	}
}
