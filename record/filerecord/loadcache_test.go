package filerecord

import (
	"bytes"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// sameCache compares two parsed caches: their slugs, keys and bytes.
func sameCache(a, b []cacheItem) string {
	return cmp.Diff(a, b, cmp.AllowUnexported(cacheItem{}, cachedFile{}, cacheKey{}), cmpopts.EquateEmpty())
}

func TestTheLoadCacheReadsBackWhatItWasWrittenWith(t *testing.T) {
	t.Parallel()
	items := []cacheItem{
		{id: "a", file: cachedFile{key: cacheKey{ino: 1 << 62, size: 0, mtime: -1, ctime: 0}, data: []byte{}}},
		{id: "motion", file: cachedFile{key: cacheKey{dev: 2049, ino: 7, size: 5, mtime: 1e18, ctime: 1e18 + 1}, data: []byte("---\n\n")}},
	}
	got, err := parseCache(encodeCache(items))
	if err != nil {
		t.Fatal(err)
	}
	if diff := sameCache(items, got); diff != "" {
		t.Errorf("read back (-written +read):\n%s", diff)
	}
	if got, err := parseCache(encodeCache(nil)); err != nil || len(got) != 0 {
		t.Errorf("an empty cache reads %v, %v", got, err)
	}
}

func TestTheLoadCacheRefusesWhatIsNotWholeOrNotItsOwn(t *testing.T) {
	t.Parallel()
	good := encodeCache([]cacheItem{{id: "motion", file: cachedFile{key: cacheKey{ino: 7, size: 3}, data: []byte("abc")}}})
	for name, b := range map[string][]byte{
		"empty":              nil,
		"cut short":          good[:len(good)-1],
		"a byte changed":     append(slices.Clone(good[:len(good)-5]), append([]byte{good[len(good)-5] ^ 1}, good[len(good)-4:]...)...),
		"the version before": append([]byte("agenthost-bots load cache 1\n"), good[len(cacheMagic):]...),
		"a count that is not its items'": func() []byte {
			w := newCacheWriter()
			w.add("motion", cacheKey{ino: 7, size: 3}, []byte("abc"))
			w.n = 2
			return w.finish()
		}(),
		"a size that is not its bytes'": encodeCache([]cacheItem{{id: "motion", file: cachedFile{key: cacheKey{ino: 7, size: 4}, data: []byte("abc")}}}),
		"a slug twice": encodeCache([]cacheItem{
			{id: "motion", file: cachedFile{key: cacheKey{ino: 7, size: 1}, data: []byte("a")}},
			{id: "motion", file: cachedFile{key: cacheKey{ino: 8, size: 1}, data: []byte("b")}},
		}),
		"out of slug order": encodeCache([]cacheItem{
			{id: "motion", file: cachedFile{key: cacheKey{ino: 7, size: 1}, data: []byte("a")}},
			{id: "alpha", file: cachedFile{key: cacheKey{ino: 8, size: 1}, data: []byte("b")}},
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
		{id: "b", file: cachedFile{key: cacheKey{ino: 9}, data: []byte{}}},
		{id: "motion", file: cachedFile{key: cacheKey{dev: 1, ino: 2, size: 3, mtime: 4, ctime: 5}, data: []byte("abc")}},
	}))
	f.Add([]byte(cacheMagic + "\x06motion"))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := parseCache(b)
		if err != nil {
			return
		}
		for _, it := range c {
			if !bytes.Contains(b, it.file.data) {
				t.Fatalf("%s's bytes are not the file's", it.id)
			}
		}
		again, err := parseCache(encodeCache(c))
		if err != nil {
			t.Fatalf("a cache that parsed, written back, does not: %v", err)
		}
		if diff := sameCache(c, again); diff != "" {
			t.Fatalf("written back (-parsed +again):\n%s", diff)
		}
	})
}

func TestALoadFindsEachSlugsCachedFileBesideItsOwnSortedSlugs(t *testing.T) {
	t.Parallel()
	file := func(ino uint64) cachedFile { return cachedFile{key: cacheKey{ino: ino, size: 1}, data: []byte("x")} }
	items := []cacheItem{{id: "b", file: file(2)}, {id: "d", file: file(4)}, {id: "e", file: file(5)}, {id: "z", file: file(26)}}
	got := alignCache([]string{"a", "b", "c", "d", "y"}, items)
	want := []cachedFile{{}, file(2), {}, file(4), {}}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(cachedFile{}, cacheKey{})); diff != "" {
		t.Errorf("aligned (-want +got):\n%s", diff)
	}
	if got := alignCache([]string{"a"}, nil); got != nil {
		t.Errorf("with no cache: %v, want nil", got)
	}
}

// encodeCache is the cache file holding items.
func encodeCache(items []cacheItem) []byte {
	w := newCacheWriter()
	for _, it := range items {
		w.add(it.id, it.file.key, it.file.data)
	}
	return w.finish()
}
