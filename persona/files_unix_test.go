//go:build unix

package persona

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestAnAGENTSThatIsAFIFOIsRefusedWithoutBlocking(t *testing.T) {
	f, _ := newFiles(t, InSection)
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "AGENTS.md"), 0o644); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	if _, err := f.Read(t.Context(), dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("Read = %v", err)
	}
}
