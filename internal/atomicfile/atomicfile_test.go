package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWriteReplacesTheFileAndLeavesNoTempFile(t *testing.T) {
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
	dir := t.TempDir()
	if err := Write(filepath.Join(dir, "nope", "f"), []byte("x"), 0o644); err == nil {
		t.Fatal("write into a missing folder succeeded")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("left %v", entries)
	}
}

func TestTempFilesAreKnownByName(t *testing.T) {
	if !IsTemp(".tmp-bot.md-123") || IsTemp("bot.md") || IsTemp(".tmp-") {
		t.Fatal("IsTemp misjudges names")
	}
}

func TestMkdirAllMakesParentsAndRefusesAFile(t *testing.T) {
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
