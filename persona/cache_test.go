package persona

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func newTestFiles(t *testing.T) *Files {
	t.Helper()
	f, err := New(Config{ConfigDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestReadSeesAnInPlaceEditOfTheSameSizeRightAfterARead(t *testing.T) {
	t.Parallel()
	f := newTestFiles(t)
	dir := t.TempDir()
	path := filepath.Join(dir, AgentsFile)
	os.WriteFile(path, []byte("---\nname: Aaaa\n---\n"), 0o644)
	if p, err := f.Read(t.Context(), dir); err != nil || p.Name != "Aaaa" {
		t.Fatalf("first read %+v, %v", p, err)
	}
	for _, name := range []string{"Bbbb", "Cccc", "Dddd"} {
		fh, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		fh.WriteAt([]byte(name), int64(len("---\nname: ")))
		fh.Close()
		if p, err := f.Read(t.Context(), dir); err != nil || p.Name != name {
			t.Fatalf("read after the edit to %s: %+v, %v", name, p, err)
		}
	}
}

func TestReadSeesAFileReplacedByRename(t *testing.T) {
	t.Parallel()
	f := newTestFiles(t)
	dir := t.TempDir()
	path := filepath.Join(dir, AgentsFile)
	os.WriteFile(path, []byte("---\nname: Old\n---\n"), 0o644)
	f.Read(t.Context(), dir)
	tmp := filepath.Join(dir, "new")
	os.WriteFile(tmp, []byte("---\nname: New\n---\n"), 0o644)
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	if p, _ := f.Read(t.Context(), dir); p.Name != "New" {
		t.Fatalf("name %q", p.Name)
	}
	os.Remove(path)
	if p, err := f.Read(t.Context(), dir); err != nil || p.Name != "" {
		t.Fatalf("read of a removed file %+v, %v", p, err)
	}
}

func TestCacheTrustsOnlyAnIdentityOlderThanTheMargin(t *testing.T) {
	t.Parallel()
	var c partsCache
	now := time.Now()
	old := Identity{Ino: 1, Size: 10, Ctime: now.Add(-time.Second).UnixNano()}
	fresh := Identity{Ino: 1, Size: 10, Ctime: now.Add(-time.Millisecond).UnixNano()}
	c.store("a", old, now, Parts{Name: "A"})
	c.store("b", fresh, now, Parts{Name: "B"})
	if p, ok := c.lookup("a", old); !ok || p.Name != "A" {
		t.Fatal("an old, unchanged identity was not trusted")
	}
	if _, ok := c.lookup("b", fresh); ok {
		t.Fatal("an identity that changed just before the read was trusted")
	}
	changed := old
	changed.Ctime++
	if _, ok := c.lookup("a", changed); ok {
		t.Fatal("a changed identity was trusted")
	}
}

// ReadIdentified takes no identity of its own: the one it is given decides
// whether the parts cached for it answer.
func TestReadIdentifiedAnswersByTheIdentityItIsGiven(t *testing.T) {
	t.Parallel()
	f := newTestFiles(t)
	dir := t.TempDir()
	path := filepath.Join(dir, AgentsFile)
	os.WriteFile(path, []byte("---\nname: Aaaa\n---\n"), 0o644)
	idA, ok := identify(path)
	if !ok {
		t.Skip("no file identity on this system")
	}
	oldA := idA // as if the file had been unchanged for an hour
	oldA.Ctime -= int64(time.Hour)
	if p, err := f.ReadIdentified(t.Context(), dir, oldA); err != nil || p.Name != "Aaaa" {
		t.Fatalf("first read %+v, %v", p, err)
	}
	os.WriteFile(path+".tmp", []byte("---\nname: Bbbb\n---\n"), 0o644)
	if err := os.Rename(path+".tmp", path); err != nil {
		t.Fatal(err)
	}
	if p, err := f.ReadIdentified(t.Context(), dir, oldA); err != nil || p.Name != "Aaaa" {
		t.Fatalf("read given the first identity: %+v, %v; want the parts cached for it", p, err)
	}
	idB, _ := identify(path)
	if p, err := f.ReadIdentified(t.Context(), dir, idB); err != nil || p.Name != "Bbbb" {
		t.Fatalf("read given the new identity: %+v, %v", p, err)
	}
	if p, err := f.Read(t.Context(), dir); err != nil || p.Name != "Bbbb" {
		t.Fatalf("Read: %+v, %v", p, err)
	}
}
