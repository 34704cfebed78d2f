//go:build unix

package persona

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestAnAGENTSThatIsAFIFOIsRefusedWithoutBlockingAndReplacedByAWrite(t *testing.T) {
	t.Parallel()
	f, _ := newFiles(t, InSection)
	dir := t.TempDir()
	path := filepath.Join(dir, "AGENTS.md")
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	if _, err := f.Read(t.Context(), dir); !errors.Is(err, ErrBadFile) || !strings.Contains(err.Error(), "named pipe") {
		t.Fatalf("Read = %v", err)
	}
	if err := f.Write(t.Context(), dir, motion, ""); err != nil {
		t.Fatalf("Write = %v", err)
	}
	if fi, err := os.Lstat(path); err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("AGENTS.md after the write: %v, %v", fi, err)
	}
}
