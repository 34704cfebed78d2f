//go:build linux

package filerecord

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

func TestMayHoldTempsFindsATempFileAmongManyNames(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	buf := make([]byte, 512) // small, so that the names take several reads
	if temps, _ := mayHoldTemps(filepath.Join(dir, "missing"), buf); temps {
		t.Error("a missing folder may hold temp files")
	}
	for i := range 200 {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("file-%03d.tmp-not", i)), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if temps, has := mayHoldTemps(dir, buf, "sessions", "file-150.tmp-not"); temps || has != [2]bool{false, true} {
		t.Errorf("a folder without temp files: temps %v, has %v, want false and [false true]", temps, has)
	}
	if err := os.WriteFile(filepath.Join(dir, ".tmp-bot.md-123"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if temps, _ := mayHoldTemps(dir, buf); !temps {
		t.Error("a folder with a temp file among 200 names holds none")
	}
}
