package filerecord

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
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
	var e etagHasher
	return e.etag(data, st)
}

// etagHasher makes etags (etagOf), keeping its hash and scratch space from
// one to the next: a load makes one per bot.
type etagHasher struct {
	h    hash.Hash // sha256; nil until the first etag
	tail [24]byte  // what an etag hashes after the file's bytes
	sum  [sha256.Size]byte
}

// etag is etagOf(data, st).
func (e *etagHasher) etag(data []byte, st fileStat) string {
	if e.h == nil {
		e.h = sha256.New()
	} else {
		e.h.Reset()
	}
	e.h.Write(data)
	binary.LittleEndian.PutUint64(e.tail[0:], st.ino)
	binary.LittleEndian.PutUint64(e.tail[8:], uint64(st.size))
	binary.LittleEndian.PutUint64(e.tail[16:], uint64(st.mtime))
	e.h.Write(e.tail[:])
	const n = 22 // base64 of the hash's first 16 bytes, unpadded
	var q [n + 2]byte
	q[0], q[n+1] = '"', '"'
	base64.RawURLEncoding.Encode(q[1:n+1], e.h.Sum(e.sum[:0])[:16])
	return string(q[:])
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
