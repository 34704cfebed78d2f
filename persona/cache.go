package persona

import (
	"sync"
	"time"
)

// racyMargin is how long after a file last changed a read of it must still
// open it. A change lands on a timestamp the kernel takes from a coarse clock
// (a few milliseconds); a file whose change time is older than the read by
// more than this margin cannot change again without a new change time, so
// the parts read then are still its parts while its identity is the same.
// This is how git tells a clean file from a racily clean one.
const racyMargin = 100 * time.Millisecond

// Identity is what a file's metadata says about its content, as lstat
// gives it: any write, rename over it or truncation gives a new one.
type Identity struct {
	Dev, Ino uint64
	Size     int64
	Mtime    int64 // nanoseconds
	Ctime    int64 // nanoseconds
}

// partsCache remembers the parts each AGENTS.md held, by the folder
// holding it as the caller names it, with the identity of the file they
// were read from: the identity alone decides whether they answer, so two
// names of one folder only keep two entries.
type partsCache struct {
	mu sync.Mutex
	m  map[string]cachedParts
}

type cachedParts struct {
	id     Identity
	parts  Parts
	readAt time.Time // taken after the identity, before the file was read
}

// lookup returns the parts cached for dir when the file still has the
// identity they were read with and had it since well before that read.
func (c *partsCache) lookup(dir string, id Identity) (Parts, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.m[dir]
	if !ok || e.id != id || time.Unix(0, id.Ctime).After(e.readAt.Add(-racyMargin)) {
		return Parts{}, false
	}
	return e.parts, true
}

func (c *partsCache) store(dir string, id Identity, readAt time.Time, p Parts) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[string]cachedParts)
	}
	c.m[dir] = cachedParts{id: id, parts: p, readAt: readAt}
}

func (c *partsCache) forget(dir string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, dir)
}
