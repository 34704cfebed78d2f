package filerecord

import (
	"bytes"
	"maps"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// cacheOf is items as parseCache answers them.
func cacheOf(items []cacheItem) map[string]cachedFile {
	out := make(map[string]cachedFile, len(items))
	for _, it := range items {
		out[it.id] = it.file
	}
	return out
}

// sameCache compares two parsed caches: their slugs, keys and bytes.
func sameCache(a, b map[string]cachedFile) string {
	return cmp.Diff(a, b, cmp.AllowUnexported(cachedFile{}, cacheKey{}))
}

func TestTheLoadCacheReadsBackWhatItWasWrittenWith(t *testing.T) {
	items := []cacheItem{
		{id: "motion", file: cachedFile{key: cacheKey{dev: 2049, ino: 7, size: 5, mtime: 1e18, ctime: 1e18 + 1}, data: []byte("---\n\n")}},
		{id: "a", file: cachedFile{key: cacheKey{ino: 1 << 62, size: 0, mtime: -1, ctime: 0}, data: []byte{}}},
	}
	got, err := parseCache(encodeCache(items))
	if err != nil {
		t.Fatal(err)
	}
	if diff := sameCache(cacheOf(items), got); diff != "" {
		t.Errorf("read back (-written +read):\n%s", diff)
	}
	if got, err := parseCache(encodeCache(nil)); err != nil || len(got) != 0 {
		t.Errorf("an empty cache reads %v, %v", got, err)
	}
}

func TestTheLoadCacheRefusesWhatIsNotWholeOrNotItsOwn(t *testing.T) {
	good := encodeCache([]cacheItem{{id: "motion", file: cachedFile{key: cacheKey{ino: 7, size: 3}, data: []byte("abc")}}})
	for name, b := range map[string][]byte{
		"empty":                         nil,
		"cut short":                     good[:len(good)-1],
		"a byte changed":                append(slices.Clone(good[:len(good)-5]), append([]byte{good[len(good)-5] ^ 1}, good[len(good)-4:]...)...),
		"another magic":                 append([]byte("agenthost-bots load cache 2\n"), good[len(cacheMagic):]...),
		"a size that is not its bytes'": encodeCache([]cacheItem{{id: "motion", file: cachedFile{key: cacheKey{ino: 7, size: 4}, data: []byte("abc")}}}),
		"a slug twice": encodeCache([]cacheItem{
			{id: "motion", file: cachedFile{key: cacheKey{ino: 7, size: 1}, data: []byte("a")}},
			{id: "motion", file: cachedFile{key: cacheKey{ino: 8, size: 1}, data: []byte("b")}},
		}),
		"no slug": encodeCache([]cacheItem{{file: cachedFile{key: cacheKey{ino: 7, size: 1}, data: []byte("a")}}}),
	} {
		if c, err := parseCache(b); err == nil {
			t.Errorf("%s: read as %v", name, c)
		}
	}
}

// FuzzParseCache: any bytes either parse or are refused, never a panic;
// what parses is written back as the same cache.
func FuzzParseCache(f *testing.F) {
	f.Add(encodeCache(nil))
	f.Add(encodeCache([]cacheItem{
		{id: "motion", file: cachedFile{key: cacheKey{dev: 1, ino: 2, size: 3, mtime: 4, ctime: 5}, data: []byte("abc")}},
		{id: "b", file: cachedFile{key: cacheKey{ino: 9}, data: []byte{}}},
	}))
	f.Add([]byte(cacheMagic + "\x06motion"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := parseCache(b)
		if err != nil {
			return
		}
		var items []cacheItem
		for _, id := range slices.Sorted(maps.Keys(c)) {
			items = append(items, cacheItem{id: id, file: c[id]})
			if !bytes.Contains(b, c[id].data) {
				t.Fatalf("%s's bytes are not the file's", id)
			}
		}
		again, err := parseCache(encodeCache(items))
		if err != nil {
			t.Fatalf("a cache that parsed, written back, does not: %v", err)
		}
		if diff := sameCache(c, again); diff != "" {
			t.Fatalf("written back (-parsed +again):\n%s", diff)
		}
	})
}
