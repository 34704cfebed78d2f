//go:build unix

package filerecord

import (
	"io/fs"
	"syscall"
)

// fileID returns the device and inode of a file: a file an atomic write
// renamed into place has an inode of its own, which the previous file still
// held while it was written, so two writes in a row never share one.
func fileID(fi fs.FileInfo) (dev, ino uint64) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Dev), uint64(st.Ino)
	}
	return 0, 0
}
