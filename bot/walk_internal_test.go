//go:build linux

package bot

import (
	"os"
	"path/filepath"
	"testing"
)

// TestTheFolderWatchAnswersForAFolderUntilItsEntryChanges: a folder found
// no link is known as such until its entry in root changes; a change to
// another entry leaves it known.
func TestTheFolderWatchAnswersForAFolderUntilItsEntryChanges(t *testing.T) {
	root := filepath.Join(t.TempDir(), "bots")
	for _, d := range []string{"motion", "other"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	s := &Service{root: root, walk: newFolderWatch(root)}
	defer s.walk.close()
	check := func(want bool) {
		t.Helper()
		if reason, err := s.folderEscape(filepath.Join(root, "motion")); err != nil || reason != "" {
			t.Fatalf("folder refused: %q, %v", reason, err)
		}
		if known, _ := s.walk.known("motion"); known != want {
			t.Fatalf("known %v, want %v", known, want)
		}
	}
	check(true)
	if err := os.Remove(filepath.Join(root, "other")); err != nil {
		t.Fatal(err)
	}
	if known, _ := s.walk.known("motion"); !known {
		t.Fatal("a change to another entry made motion unknown")
	}
	if err := os.Rename(filepath.Join(root, "motion"), filepath.Join(root, "motion2")); err != nil {
		t.Fatal(err)
	}
	if known, _ := s.walk.known("motion"); known {
		t.Fatal("motion is still known once moved away")
	}
	if err := os.Rename(filepath.Join(root, "motion2"), filepath.Join(root, "motion")); err != nil {
		t.Fatal(err)
	}
	check(true)
	s.walk.close()
	if known, _ := s.walk.known("motion"); known {
		t.Fatal("known after close")
	}
	if reason, err := s.folderEscape(filepath.Join(root, "motion")); err != nil || reason != "" {
		t.Fatalf("after close: %q, %v", reason, err)
	}
}
