package filerecord

import (
	"bytes"
	"encoding/binary"
	"errors"

	"golang.org/x/sys/unix"
)

// tempPrefix starts the names of atomicfile's temp files (atomicfile.IsTemp).
var tempPrefix = []byte(".tmp-")

// mayHoldTemps reports whether dir may hold a temp file: it lists the
// folder's names into buf with getdents and looks for one that starts like
// a temp file, allocating nothing, where os.ReadDir makes an entry for
// every name. A folder that is not there holds none; one that cannot be
// listed may (the sweep then lists it as it always did, and reports why).
// has tells which of names (at most two) the folder holds.
func mayHoldTemps(dir string, buf []byte, names ...string) (temps bool, has [2]bool) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ENOTDIR) {
			return false, has
		}
		return true, [2]bool{true, true}
	}
	defer unix.Close(fd)
	for {
		n, err := unix.Getdents(fd, buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return true, [2]bool{true, true}
		}
		if n <= 0 {
			return temps, has
		}
		for b := buf[:n]; len(b) > 0; {
			// struct linux_dirent64: ino 8, off 8, reclen 2, type 1, name.
			if len(b) < 19 {
				return true, [2]bool{true, true}
			}
			reclen := int(binary.NativeEndian.Uint16(b[16:18]))
			if reclen < 19 || reclen > len(b) {
				return true, [2]bool{true, true}
			}
			name := b[19:reclen]
			if i := bytes.IndexByte(name, 0); i >= 0 {
				name = name[:i]
			}
			if bytes.HasPrefix(name, tempPrefix) {
				temps = true
			}
			for i, want := range names {
				if i < len(has) && string(name) == want {
					has[i] = true
				}
			}
			b = b[reclen:]
		}
	}
}
