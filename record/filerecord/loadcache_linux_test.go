//go:build linux

package filerecord

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/bots/record"
)

// writeBots writes a bot.md for each slug in configDir, named name.
func writeBots(t *testing.T, configDir, name string, slugs ...string) {
	t.Helper()
	for _, id := range slugs {
		writeBot(t, configDir, id, name)
	}
}

func writeBot(t *testing.T, configDir, id, name string) {
	t.Helper()
	dir := filepath.Join(configDir, botsDirName, id)
	if err := os.MkdirAll(dir, dirPerm); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bot.md"), Encode(record.Record{ID: id, Name: name}), filePerm); err != nil {
		t.Fatal(err)
	}
}

// loadAt opens a store over configDir whose load began at began (the
// clock its cache reads), logging to logs, and waits for its background
// work (the cache's write among it).
func loadAt(t *testing.T, configDir string, began time.Time, logs io.Writer) *Store {
	t.Helper()
	s, err := OpenBeganAt(context.Background(), Config{ConfigDir: configDir, Logger: slog.New(slog.NewTextHandler(logs, nil))}, began)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	s.WaitSwept()
	return s
}

// cacheFile reads configDir's load cache; nil when there is none.
func cacheFile(t *testing.T, configDir string) map[string]cachedFile {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(configDir, cacheName))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	items, err := parseCache(b)
	if err != nil {
		t.Fatal(err)
	}
	c := make(map[string]cachedFile, len(items))
	for _, it := range items {
		c[it.id] = it.file
	}
	return c
}

// entryOf is bot id's entry in s.
func entryOf(t *testing.T, s *Store, id string) record.Entry {
	t.Helper()
	e, err := s.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestALoadTakesAnUnchangedBotMdFromTheCacheAndAChangedOneFromItsFile: a
// load writes the cache of the files it read; the next takes from it
// each file whose stat is unchanged (its bytes, here forged to tell them
// apart, and the same etag), and reads each other from the file.
func TestALoadTakesAnUnchangedBotMdFromTheCacheAndAChangedOneFromItsFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeBots(t, dir, "Disk1", "kept", "edited", "plain")
	later := time.Now().Add(time.Hour) // every file is old enough to keep
	s := loadAt(t, dir, later, io.Discard)
	plainTag := entryOf(t, s, "plain").ETag
	s.Close()
	c := cacheFile(t, dir)
	if len(c) != 3 {
		t.Fatalf("the cache holds %d files, want 3", len(c))
	}
	// The cache's bytes of kept are made another name of the same size,
	// so that a load that takes them shows it.
	forged := c["kept"]
	forged.data = bytes.Replace(forged.data, []byte("Disk1"), []byte("Cach1"), 1)
	c["kept"] = forged
	var items []cacheItem // in slug order, as a load writes them
	for _, id := range slices.Sorted(maps.Keys(c)) {
		items = append(items, cacheItem{id: id, file: c[id]})
	}
	if err := os.WriteFile(filepath.Join(dir, cacheName), encodeCache(items), filePerm); err != nil {
		t.Fatal(err)
	}
	writeBot(t, dir, "edited", "Disk2") // the same size, written in place
	s = loadAt(t, dir, later, io.Discard)
	if got := entryOf(t, s, "kept").Record.Name; got != "Cach1" {
		t.Errorf("kept reads %q, want the cache's Cach1", got)
	}
	if got := entryOf(t, s, "edited").Record.Name; got != "Disk2" {
		t.Errorf("edited reads %q, want its file's Disk2", got)
	}
	if e := entryOf(t, s, "plain"); e.Record.Name != "Disk1" || e.ETag != plainTag {
		t.Errorf("plain reads %q with etag %s, want Disk1 with the etag the file's read gave, %s", e.Record.Name, e.ETag, plainTag)
	}
	if got := cacheFile(t, dir)["edited"].data; !bytes.Contains(got, []byte("Disk2")) {
		t.Errorf("the cache written after the load holds edited as %q, want its new bytes", got)
	}
}

// TestALoadCachesNoFileChangedTooRecentlyToTrustItsStat: a file changed
// within racyMargin of the load's start is read by every load, and kept
// in no cache, until it is old enough.
func TestALoadCachesNoFileChangedTooRecentlyToTrustItsStat(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeBots(t, dir, "Disk1", "fresh")
	loadAt(t, dir, time.Now(), io.Discard).Close()
	if c := cacheFile(t, dir); c != nil {
		t.Fatalf("a cache of a file just written was kept: %v", c)
	}
	loadAt(t, dir, time.Now().Add(racyMargin+time.Second), io.Discard).Close()
	if c := cacheFile(t, dir); len(c) != 1 {
		t.Fatalf("the cache holds %d files once the file is old enough, want 1", len(c))
	}
}

// TestALoadRewritesTheCacheOnlyWhenWhatItFoundDiffers: a load that found
// what the cache held leaves it as it is; one that found a bot gone
// writes it again without.
func TestALoadRewritesTheCacheOnlyWhenWhatItFoundDiffers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeBots(t, dir, "Disk1", "a", "b")
	later := time.Now().Add(time.Hour)
	loadAt(t, dir, later, io.Discard).Close()
	path := filepath.Join(dir, cacheName)
	first, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	loadAt(t, dir, later, io.Discard).Close()
	again, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(first, again) {
		t.Error("a load that found what the cache held wrote it again")
	}
	if err := os.RemoveAll(filepath.Join(dir, botsDirName, "b")); err != nil {
		t.Fatal(err)
	}
	loadAt(t, dir, later, io.Discard).Close()
	if c := cacheFile(t, dir); len(c) != 1 || c["a"].data == nil {
		t.Errorf("after b was removed the cache holds %d files, want a alone", len(c))
	}
}

// TestALoadLeavesAsideACacheItCannotReadAndReadsEveryFile: a cache that
// does not parse is said in the log and left aside; every bot is read
// from its file, and the cache is written anew.
func TestALoadLeavesAsideACacheItCannotReadAndReadsEveryFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeBots(t, dir, "Disk1", "a", "b")
	if err := os.WriteFile(filepath.Join(dir, cacheName), []byte(cacheMagic+"not a cache"), filePerm); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	s := loadAt(t, dir, time.Now().Add(time.Hour), &logs)
	for _, id := range []string{"a", "b"} {
		if got := entryOf(t, s, id).Record.Name; got != "Disk1" {
			t.Errorf("%s reads %q, want Disk1", id, got)
		}
	}
	if !strings.Contains(logs.String(), "the load cache is left aside") {
		t.Errorf("the log does not say the cache was left aside:\n%s", logs.String())
	}
	if c := cacheFile(t, dir); len(c) != 2 {
		t.Errorf("the cache written anew holds %d files, want 2", len(c))
	}
}

// TestTheCacheKeepsNoFileChangedBetweenTheLoadAndItsWrite: the cache's
// write reads again each file the load read, and leaves out one whose
// stat is no longer the load's, so the next load reads it.
func TestTheCacheKeepsNoFileChangedBetweenTheLoadAndItsWrite(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeBots(t, dir, "Disk1", "kept", "edited")
	hold := make(chan struct{}) // the write waits for the watches, which wait for this
	s, err := OpenBeganAt(context.Background(), Config{ConfigDir: dir, Watch: true, WatchAfter: hold}, time.Now().Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	writeBot(t, dir, "edited", "Disk2")
	close(hold)
	s.WaitSwept()
	c := cacheFile(t, dir)
	if _, ok := c["edited"]; ok || len(c) != 1 {
		t.Errorf("the cache holds %d files (edited: %v), want kept alone", len(c), ok)
	}
}
