package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestWriteReplacesTheFileAndLeavesNoTempFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "bot.md")
	for _, content := range []string{"first", "second, longer"} {
		if err := Write(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != content {
			t.Fatalf("read %q, %v; want %q", got, err, content)
		}
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, %v", fi.Mode(), err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("folder holds %d entries, want only the file", len(entries))
	}
}

func TestWriteIntoAMissingFolderFailsAndLeavesNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := Write(filepath.Join(dir, "nope", "f"), []byte("x"), 0o644); err == nil {
		t.Fatal("write into a missing folder succeeded")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("left %v", entries)
	}
}

func TestTempFilesAreKnownByName(t *testing.T) {
	t.Parallel()
	if !IsTemp(".tmp-bot.md-123") || IsTemp("bot.md") || IsTemp(".tmp-") {
		t.Fatal("IsTemp misjudges names")
	}
}

func TestMkdirAllMakesParentsAndRefusesAFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	deep := filepath.Join(dir, "a", "b", "c")
	if err := MkdirAll(deep, 0o755); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(deep); err != nil || !fi.IsDir() {
		t.Fatalf("not made: %v", err)
	}
	if err := MkdirAll(deep, 0o755); err != nil {
		t.Fatalf("second MkdirAll: %v", err)
	}
	file := filepath.Join(dir, "file")
	os.WriteFile(file, nil, 0o644)
	if err := MkdirAll(file, 0o755); err == nil {
		t.Fatal("MkdirAll over a file succeeded")
	}
}

// plant writes a file at path last modified at mod.
func plant(t *testing.T, path string, mod time.Time) {
	t.Helper()
	if err := os.WriteFile(path, []byte("half"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, mod, mod); err != nil {
		t.Fatal(err)
	}
}

func TestRemoveStaleTakesOnlyOldTempFilesOfTheTargetsNamed(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	old, now := time.Now().Add(-time.Hour), time.Now()
	plant(t, filepath.Join(dir, ".tmp-AGENTS.md-123"), old) // a write killed long ago
	plant(t, filepath.Join(dir, ".tmp-AGENTS.md-456"), now) // a write that may be in progress
	plant(t, filepath.Join(dir, ".tmp-notes.txt-789"), old) // the folder's owner's own
	plant(t, filepath.Join(dir, "AGENTS.md"), old)          // no temp file
	if err := os.Mkdir(filepath.Join(dir, ".tmp-AGENTS.md-dir"), 0o700); err != nil {
		t.Fatal(err)
	}
	removed, err := RemoveStale(dir, now.Add(-StaleAfter), "AGENTS.md", "CLAUDE.md")
	if err != nil || len(removed) != 1 || removed[0] != filepath.Join(dir, ".tmp-AGENTS.md-123") {
		t.Fatalf("removed %v, %v", removed, err)
	}
	for _, kept := range []string{".tmp-AGENTS.md-456", ".tmp-notes.txt-789", "AGENTS.md", ".tmp-AGENTS.md-dir"} {
		if _, err := os.Lstat(filepath.Join(dir, kept)); err != nil {
			t.Errorf("%s: %v", kept, err)
		}
	}
	// With no targets every old temp file goes.
	if removed, err := RemoveStale(dir, now.Add(-StaleAfter)); err != nil || len(removed) != 1 {
		t.Fatalf("removed %v, %v", removed, err)
	}
	if removed, err := RemoveStale(filepath.Join(dir, "missing"), now); err != nil || removed != nil {
		t.Fatalf("a missing folder: %v, %v", removed, err)
	}
}

func TestSweepSaysWhetherTempFilesOfTheTargetsTooYoungToTakeAreLeft(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	now := time.Now()
	plant(t, filepath.Join(dir, ".tmp-notes.txt-1"), now) // not a target: says nothing
	if _, young, err := Sweep(dir, now.Add(-StaleAfter), "AGENTS.md"); err != nil || young {
		t.Fatalf("a folder with no temp file of the targets: young %v, %v", young, err)
	}
	plant(t, filepath.Join(dir, ".tmp-AGENTS.md-2"), now)
	removed, young, err := Sweep(dir, now.Add(-StaleAfter), "AGENTS.md")
	if err != nil || !young || len(removed) != 0 {
		t.Fatalf("a young temp file: removed %v, young %v, %v", removed, young, err)
	}
	removed, young, err = Sweep(dir, now.Add(time.Second), "AGENTS.md")
	if err != nil || young || len(removed) != 1 {
		t.Fatalf("once it is old enough: removed %v, young %v, %v", removed, young, err)
	}
}

func TestWriteNewWritesOnlyWhereNoFileIsAndLeavesNoTempFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "token")
	if err := WriteNew(path, []byte("first"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WriteNew(path, []byte("second"), 0o600); !errors.Is(err, fs.ErrExist) {
		t.Errorf("a second WriteNew answered %v, want fs.ErrExist", err)
	}
	data, err := os.ReadFile(path)
	if err != nil || string(data) != "first" {
		t.Errorf("the file holds %q (%v), want the first write", data, err)
	}
	info, err := os.Stat(path)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("the file is %v (%v), want mode 0600", info.Mode(), err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("the folder holds %d files, want the one written", len(ents))
	}
}
