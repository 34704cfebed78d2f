package filerecord

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/agenthost/bots/internal/atomicfile"
	"github.com/agenthost/bots/internal/frontmatter"
)

// The load cache, <configDir>/bots.cache, holds the bytes of each bot.md a
// load read, with the file's stat as that read found it: its device,
// inode, size, and modification and change times (cacheKey). A later load
// that finds a bot.md with the very same stat takes its bytes from the
// cache instead of the file: one stat instead of the five system calls of
// a read (open, fstat, read, fstat, close), which at 100,000 bots is half
// a second of the CPU of a start. The bytes are decoded as the file's
// would be, so the record, its etag and its problems are the same.
//
// The same stat means the same bytes: a write to the file sets its change
// time, which no program can set back, and a rename over it (every write
// of this store, most editors' saves) gives it another inode. A write in
// the same clock tick as the one before could leave both times as they
// were, so a file whose modification or change time is not older than
// racyMargin before the load began is not kept in the cache (as git's
// index does with a file changed as it was indexed): each load reads it,
// until it is old enough. Were the clock set back, a write might be given
// times already seen; that would need the very nanosecond, size and inode
// of the stat kept.
//
// The cache is written once a load has ended, in the background (before
// the sweep of temp files, and for a watching store once its watches are
// set), when it differs from what the load found: a file read that it did
// not hold, or a bot it held that is gone. A load keeps no file's bytes:
// the write reads again each file the load read, and leaves out one whose
// stat is no longer the load's. A cache that is missing, cannot be read
// or does not parse is left aside, and the load reads every file, as
// without one. It holds nothing the bot folders do not: removing it costs
// the next start its speed, no more. Only Linux keeps one: elsewhere no
// key is taken from a read.

const (
	// cacheName is the cache's file in the configuration folder.
	cacheName = "bots.cache"
	// cacheMagic opens the cache; another version is not read.
	cacheMagic = "agenthost-bots load cache 2\n"
	// racyMargin is how much older than the load's start a file's times
	// must be for the cache to keep it: more than a clock tick, and than
	// the one-second times of the coarsest file systems (ext3, HFS+).
	racyMargin = 2 * time.Second
)

// cacheKey is what the cache compares of a file's stat.
type cacheKey struct {
	dev, ino           uint64
	size, mtime, ctime int64 // ctime and mtime in nanoseconds since 1970
}

// stat is the fileStat of the file key describes.
func (k cacheKey) stat() fileStat { return fileStat{ino: k.ino, size: k.size, mtime: k.mtime} }

// cacheable reports whether a file of key may be kept in a cache of a
// load that began at began: a key is known, and its times are old enough.
func (k cacheKey) cacheable(began time.Time) bool {
	cut := began.Add(-racyMargin).UnixNano()
	return k.ino != 0 && k.mtime < cut && k.ctime < cut
}

// cachedFile is one bot.md the cache holds.
type cachedFile struct {
	key  cacheKey
	data []byte
}

// cacheItem is one bot.md a cache is written with.
type cacheItem struct {
	id   string
	file cachedFile
}

// cacheWriter makes a cache file: cacheMagic, then for each file its
// slug, key and bytes, then the count of files (four bytes, so that a
// read sizes its slice at once), then the CRC-32 of all that.
type cacheWriter struct {
	b []byte
	n uint32
}

func newCacheWriter() *cacheWriter {
	return &cacheWriter{b: append(make([]byte, 0, 64<<10), cacheMagic...)}
}

// add adds bot id's bot.md of key and bytes data.
func (w *cacheWriter) add(id string, k cacheKey, data []byte) {
	w.b = binary.AppendUvarint(w.b, uint64(len(id)))
	w.b = append(w.b, id...)
	w.b = binary.AppendUvarint(w.b, k.dev)
	w.b = binary.AppendUvarint(w.b, k.ino)
	w.b = binary.AppendVarint(w.b, k.size)
	w.b = binary.AppendVarint(w.b, k.mtime)
	w.b = binary.AppendVarint(w.b, k.ctime)
	w.b = binary.AppendUvarint(w.b, uint64(len(data)))
	w.b = append(w.b, data...)
	w.n++
}

// finish is the cache file.
func (w *cacheWriter) finish() []byte {
	w.b = binary.BigEndian.AppendUint32(w.b, w.n)
	return binary.BigEndian.AppendUint32(w.b, crc32.ChecksumIEEE(w.b))
}

// errBadCache is why a cache file is left aside.
var errBadCache = errors.New("not a load cache this version writes, or not whole")

// parseCache reads a cache file: its items in the file's order, which is
// the slugs' (a load writes them so, and a cache out of that order is
// refused), so that a load walks them beside its own sorted slugs with
// no map of 100,000 keys to build. The bytes it answers are b's own.
func parseCache(b []byte) ([]cacheItem, error) {
	if len(b) < len(cacheMagic)+8 || string(b[:len(cacheMagic)]) != cacheMagic {
		return nil, errBadCache
	}
	body, sum := b[:len(b)-4], binary.BigEndian.Uint32(b[len(b)-4:])
	if crc32.ChecksumIEEE(body) != sum {
		return nil, errBadCache
	}
	rest, count := body[len(cacheMagic):len(body)-4], binary.BigEndian.Uint32(body[len(body)-4:])
	if uint64(count) > uint64(len(rest)) { // an item takes more than a byte
		return nil, errBadCache
	}
	out := make([]cacheItem, 0, count)
	uvarint := func() (uint64, bool) {
		v, n := binary.Uvarint(rest)
		if n <= 0 {
			return 0, false
		}
		rest = rest[n:]
		return v, true
	}
	varint := func() (int64, bool) {
		v, n := binary.Varint(rest)
		if n <= 0 {
			return 0, false
		}
		rest = rest[n:]
		return v, true
	}
	field := func(max uint64) ([]byte, bool) {
		n, ok := uvarint()
		if !ok || n > max || n > uint64(len(rest)) {
			return nil, false
		}
		v := rest[:n:n]
		rest = rest[n:]
		return v, true
	}
	for len(rest) > 0 {
		var f cachedFile
		id, ok := field(255)
		ok = ok && len(id) > 0
		var dev, ino uint64
		var size, mtime, ctime int64
		if ok {
			dev, ok = uvarint()
		}
		if ok {
			ino, ok = uvarint()
		}
		if ok {
			size, ok = varint()
		}
		if ok {
			mtime, ok = varint()
		}
		if ok {
			ctime, ok = varint()
		}
		if ok {
			f.data, ok = field(frontmatter.MaxSize)
		}
		if !ok {
			return nil, errBadCache
		}
		if len(out) > 0 && out[len(out)-1].id >= string(id) || size != int64(len(f.data)) {
			return nil, errBadCache // out of slug order, a slug twice, or bytes not of the size
		}
		f.key = cacheKey{dev: dev, ino: ino, size: size, mtime: mtime, ctime: ctime}
		out = append(out, cacheItem{id: string(id), file: f})
	}
	if len(out) != int(count) {
		return nil, errBadCache
	}
	return out, nil
}

// alignCache is, for each of the sorted slugs ids, the file items holds
// of it (items in slug order, as parseCache answers them): a zero
// cachedFile for a slug it does not hold.
func alignCache(ids []string, items []cacheItem) []cachedFile {
	if len(items) == 0 {
		return nil
	}
	out := make([]cachedFile, len(ids))
	j := 0
	for i, id := range ids {
		for j < len(items) && items[j].id < id {
			j++
		}
		if j == len(items) {
			break
		}
		if items[j].id == id {
			out[i] = items[j].file
		}
	}
	return out
}

// readCache reads the store's cache: nil when there is none, or it is
// left aside (logged).
func (s *Store) readCache() []cacheItem {
	path := filepath.Join(s.configDir, cacheName)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err == nil {
		var c []cacheItem
		if c, err = parseCache(b); err == nil {
			return c
		}
	}
	s.log.Info("the load cache is left aside: every bot.md is read", "path", path, "reason", err)
	return nil
}

// writeCache replaces the store's cache with one of items. An item with
// no bytes is a file the load read: it is read again, and kept only when
// it still has the stat the load found (a file changed since is read by
// the next load). It gives up, writing nothing, once the store is closed.
func (s *Store) writeCache(items []cacheItem) {
	w := newCacheWriter()
	var buf []byte
	for i, it := range items {
		if i%256 == 0 {
			select {
			case <-s.stop:
				return
			default:
			}
		}
		data := it.file.data
		if data == nil {
			d, _, key, err := readFileKeyed(s.file(it.id), buf)
			if err != nil || key != it.file.key {
				continue
			}
			if cap(d) > cap(buf) && cap(d) <= maxKeptBuffer {
				buf = d[:0]
			}
			data = d
		}
		w.add(it.id, it.file.key, data)
	}
	path := filepath.Join(s.configDir, cacheName)
	if err := atomicfile.Write(path, w.finish(), filePerm); err != nil {
		s.log.Info("the load cache could not be written: the next start reads every bot.md", "path", path, "err", err)
	}
}
