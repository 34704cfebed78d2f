//go:build unix

package bot

import (
	"io/fs"
	"syscall"
)

// isLink reports whether path is a symbolic link, as os.Lstat's mode
// says, with its error; it asks the kernel directly rather than through
// os.Lstat, which would build a FileInfo on the heap: every read of a bot
// looks here.
func isLink(path string) (bool, error) {
	var st syscall.Stat_t
	err := syscall.Lstat(path, &st)
	for err == syscall.EINTR {
		err = syscall.Lstat(path, &st)
	}
	if err != nil {
		return false, &fs.PathError{Op: "lstat", Path: path, Err: err}
	}
	return st.Mode&syscall.S_IFMT == syscall.S_IFLNK, nil
}
