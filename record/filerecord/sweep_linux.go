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
func mayHoldTemps(dir string, buf []byte) bool {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.ENOTDIR)
	}
	defer unix.Close(fd)
	for {
		n, err := unix.Getdents(fd, buf)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return true
		}
		if n <= 0 {
			return false
		}
		for b := buf[:n]; len(b) > 0; {
			// struct linux_dirent64: ino 8, off 8, reclen 2, type 1, name.
			if len(b) < 19 {
				return true
			}
			reclen := int(binary.NativeEndian.Uint16(b[16:18]))
			if reclen < 19 || reclen > len(b) {
				return true
			}
			if bytes.HasPrefix(b[19:reclen], tempPrefix) {
				return true
			}
			b = b[reclen:]
		}
	}
}
