//go:build linux

package filerecord

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

func TestMayHoldTempsFindsATempFileAmongManyNames(t *testing.T) {
	dir := t.TempDir()
	buf := make([]byte, 512) // small, so that the names take several reads
	if mayHoldTemps(filepath.Join(dir, "missing"), buf) {
		t.Error("a missing folder may hold temp files")
	}
	for i := range 200 {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("file-%03d.tmp-not", i)), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if mayHoldTemps(dir, buf) {
		t.Error("a folder without temp files may hold one")
	}
	if err := os.WriteFile(filepath.Join(dir, ".tmp-bot.md-123"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if !mayHoldTemps(dir, buf) {
		t.Error("a folder with a temp file among 200 names holds none")
	}
}
