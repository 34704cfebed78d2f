//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package persona

import (
	"os"
	"syscall"
)

func identityOf(fi os.FileInfo) (identity, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return identity{}, false
	}
	return identity{
		dev:   uint64(st.Dev),
		ino:   uint64(st.Ino),
		size:  fi.Size(),
		mtime: fi.ModTime().UnixNano(),
		ctime: ctimeOf(st),
	}, true
}
