package filechatlog

import (
	"os"

	"golang.org/x/sys/unix"
)

// holdsNoFolder reports whether the folder name in dir is known to hold
// no folder, so that no log folder can be in it: its link count is 2 (its
// name and its own "."), on a file system that counts a folder's
// subfolders in its links (ext4, xfs, tmpfs). Any other count - a
// subfolder, or a file system that does not count them (btrfs answers 1)
// - says nothing, and the folder is looked into. One fstatat beside dir
// costs less than opening name/<kind> to find it absent, which is what
// List did for every bot without logs (issue 15).
func holdsNoFolder(dir *os.File, name string) bool {
	var st unix.Stat_t
	if err := unix.Fstatat(int(dir.Fd()), name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return false
	}
	return st.Mode&unix.S_IFMT == unix.S_IFDIR && st.Nlink == 2
}
