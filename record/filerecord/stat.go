package filerecord

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"

	"github.com/agenthost/bots/internal/frontmatter"
)

// fileStat is what an etag takes from a file besides its bytes.
type fileStat struct {
	ino   uint64 // 0 where the system has no inodes
	size  int64
	mtime int64 // nanoseconds since 1970
}

// errNoFile is readFile's answer for a folder without a bot.md.
var errNoFile = errors.New("no bot.md")

// errNotRegular and errTooLarge are readFile's answers for a bot.md that is
// no file or too large to be a record; they are one sentence each.
var (
	errNotRegular = fmt.Errorf("%s is not a regular file", fileName)
	errTooLarge   = fmt.Errorf("the file is %w", frontmatter.ErrTooLarge)
	errChanging   = errors.New("the file was being written while it was read")
)

// etagOf is the etag of a file: a hash of its bytes, inode, size and
// modification time, quoted as an HTTP strong etag. An atomic write renames
// a new file over the old one while the old still holds its inode, so two
// writes in a row never share an inode, even of the same bytes.
func etagOf(data []byte, st fileStat) string {
	h := sha256.New()
	h.Write(data)
	var tail [24]byte
	binary.LittleEndian.PutUint64(tail[0:], st.ino)
	binary.LittleEndian.PutUint64(tail[8:], uint64(st.size))
	binary.LittleEndian.PutUint64(tail[16:], uint64(st.mtime))
	h.Write(tail[:])
	var sum [sha256.Size]byte
	return `"` + base64.RawURLEncoding.EncodeToString(h.Sum(sum[:0])[:16]) + `"`
}

// unwrapPath drops the path from an *fs.PathError: a problem names the path
// on its own.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
