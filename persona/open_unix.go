//go:build unix

package persona

import (
	"errors"
	"os"
	"syscall"
)

// openFile opens path for reading. With follow false it refuses a symlink
// (O_NOFOLLOW) and does not block on a FIFO (O_NONBLOCK).
func openFile(path string, follow bool) (*os.File, error) {
	if follow {
		return os.Open(path)
	}
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	switch {
	case errors.Is(err, syscall.ELOOP):
		return nil, badFile(path, whySymlink, nil)
	case errors.Is(err, syscall.ENXIO):
		return nil, badFile(path, whyNotRegular(os.ModeSocket), err)
	}
	return f, err
}
