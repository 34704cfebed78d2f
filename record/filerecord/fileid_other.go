//go:build !unix

package filerecord

import "io/fs"

// fileID has no inode to give on this system; the etag then rests on the
// bytes, the size and the modification time.
func fileID(fi fs.FileInfo) (dev, ino uint64) { return 0, 0 }
