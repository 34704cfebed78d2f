//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package persona

import "syscall"

// identify returns the identity of the regular file at path, without
// following a symlink; ok is false when there is none to trust. It asks
// the kernel directly rather than through os.Lstat, which would build a
// FileInfo on the heap: every read of a bot looks here.
func identify(path string) (Identity, bool) {
	var st syscall.Stat_t
	err := syscall.Lstat(path, &st)
	for err == syscall.EINTR {
		err = syscall.Lstat(path, &st)
	}
	if err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		return Identity{}, false
	}
	return Identity{
		Dev:   uint64(st.Dev),
		Ino:   uint64(st.Ino),
		Size:  st.Size,
		Mtime: mtimeOf(&st),
		Ctime: ctimeOf(&st),
	}, true
}
