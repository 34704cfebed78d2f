package keyfile_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agenthost/bots/internal/keyfile"
)

type value struct {
	Name  string `json:"name"`
	Count int    `json:"count"`
}

func store(dir string, cache bool) *keyfile.Store[string, value] {
	return keyfile.New(keyfile.Config[string, value]{
		Path: func(k string) (string, error) {
			if k == "" || strings.ContainsAny(k, `/\.`) {
				return "", fmt.Errorf("%q cannot name a file", k)
			}
			return filepath.Join(dir, "sub", k+".json"), nil
		},
		Cache: cache,
	})
}

func TestPutThenGetGivesTheValueBackAcrossStores(t *testing.T) {
	t.Parallel()
	for _, cache := range []bool{false, true} {
		dir := t.TempDir()
		s := store(dir, cache)
		if err := s.Put("motion", value{"Motion", 2}); err != nil {
			t.Fatal(err)
		}
		if err := s.Put("motion", value{"Motion", 3}); err != nil {
			t.Fatal(err)
		}
		for _, from := range []*keyfile.Store[string, value]{s, store(dir, cache)} {
			v, ok, err := from.Get("motion")
			if err != nil || !ok || v != (value{"Motion", 3}) {
				t.Fatalf("cache %v: Get: %+v, %v, %v", cache, v, ok, err)
			}
		}
	}
}

func TestGetOfAKeyWithNoFileIsNotOK(t *testing.T) {
	t.Parallel()
	v, ok, err := store(t.TempDir(), true).Get("nobody")
	if err != nil || ok || v != (value{}) {
		t.Fatalf("Get: %+v, %v, %v", v, ok, err)
	}
}

func TestFilesAreOwnerOnlyAndLeaveNoTemp(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := store(dir, false).Put("motion", value{"Motion", 1}); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, "sub")
	fi, err := os.Stat(sub)
	if err != nil || fi.Mode().Perm() != keyfile.DirMode {
		t.Fatalf("folder: %v, %v", fi.Mode(), err)
	}
	entries, err := os.ReadDir(sub)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != "motion.json" {
		t.Fatalf("the folder holds %v, want only motion.json", entries)
	}
	fi, err = os.Stat(filepath.Join(sub, "motion.json"))
	if err != nil || fi.Mode().Perm() != keyfile.FileMode {
		t.Fatalf("file: %v, %v", fi.Mode(), err)
	}
}

func TestAFileThatIsNotJSONIsAnErrorNamingIt(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "motion.json")
	os.MkdirAll(filepath.Dir(path), 0o700)
	if err := os.WriteFile(path, []byte("not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, ok, err := store(dir, true).Get("motion")
	if err == nil || ok || !strings.Contains(err.Error(), path) {
		t.Fatalf("Get of a broken file: %v, %v; want an error naming %s", ok, err, path)
	}
}

func TestAKeyThePathRefusesIsRefusedOnBothSides(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := store(dir, true)
	if err := s.Put("../escape", value{}); err == nil {
		t.Fatal("Put of a key naming no file succeeded")
	}
	if _, _, err := s.Get("../escape"); err == nil {
		t.Fatal("Get of a key naming no file succeeded")
	}
	if _, err := os.Stat(filepath.Join(dir, "escape.json")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a refused key left a file: %v", err)
	}
}

func TestDecodeReadsOtherFormats(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := keyfile.New(keyfile.Config[string, value]{
		Path: func(k string) (string, error) { return filepath.Join(dir, k), nil },
		Decode: func(data []byte) (value, bool, error) {
			text := strings.TrimSpace(string(data))
			return value{Name: text}, text != "", nil
		},
	})
	os.WriteFile(filepath.Join(dir, "old"), []byte("plain id\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "empty"), []byte("\n"), 0o600)
	if v, ok, err := s.Get("old"); err != nil || !ok || v.Name != "plain id" {
		t.Fatalf("Get(old): %+v, %v, %v", v, ok, err)
	}
	if _, ok, err := s.Get("empty"); err != nil || ok {
		t.Fatalf("Get(empty): %v, %v; want no value", ok, err)
	}
}

func TestConcurrentPutsOfOneKeyLeaveOneWholeValue(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := store(dir, false)
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.Put("motion", value{strings.Repeat("x", i*100), i}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	v, ok, err := store(dir, false).Get("motion")
	if err != nil || !ok || len(v.Name) != v.Count*100 {
		t.Fatalf("after racing puts: %d bytes of name, count %d, %v, %v", len(v.Name), v.Count, ok, err)
	}
}
