//go:build linux

package rootwatch

import (
	"os"
	"path/filepath"
	"testing"
)

// folders is a root holding the given folders.
func folders(t *testing.T, names ...string) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "bots")
	for _, n := range names {
		if err := os.MkdirAll(filepath.Join(root, n), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestAFolderRememberedIsKnownUntilItsEntryChanges(t *testing.T) {
	t.Parallel()
	root := folders(t, "motion", "other")
	w := New(root)
	defer w.Close()
	if known, gen := w.Known("motion"); known {
		t.Fatal("known before any look")
	} else {
		w.Remember("motion", gen)
	}
	if known, _ := w.Known("motion"); !known {
		t.Fatal("not known once remembered")
	}
	if err := os.Remove(filepath.Join(root, "other")); err != nil {
		t.Fatal(err)
	}
	if known, _ := w.Known("motion"); !known {
		t.Fatal("a change to another entry made motion unknown")
	}
	if err := os.Rename(filepath.Join(root, "motion"), filepath.Join(root, "moved")); err != nil {
		t.Fatal(err)
	}
	if known, _ := w.Known("motion"); known {
		t.Fatal("still known once moved away")
	}
}

func TestARememberAfterAnEventTakenMeanwhileDoesNotHold(t *testing.T) {
	t.Parallel()
	root := folders(t, "motion")
	w := New(root)
	defer w.Close()
	_, gen := w.Known("motion")
	// The folder is swapped for another between the look and Remember.
	if err := os.Rename(filepath.Join(root, "motion"), filepath.Join(root, "old")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "motion"), 0o755); err != nil {
		t.Fatal(err)
	}
	w.Known("other") // takes the events
	w.Remember("motion", gen)
	if known, _ := w.Known("motion"); known {
		t.Fatal("a look older than the events taken since was remembered")
	}
}

func TestLearnRootKnowsEveryFolderAndNoLink(t *testing.T) {
	t.Parallel()
	root := folders(t, "motion", "notes")
	if err := os.Symlink(filepath.Join(root, "notes"), filepath.Join(root, "linked")); err != nil {
		t.Fatal(err)
	}
	w := New(root)
	defer w.Close()
	w.LearnRoot()
	for name, want := range map[string]bool{"motion": true, "notes": true, "linked": false} {
		if known, _ := w.Known(name); known != want {
			t.Errorf("%s known %v, want %v", name, known, want)
		}
	}
}

func TestAClosedWatchKnowsNothingAndANilOneNeither(t *testing.T) {
	t.Parallel()
	root := folders(t, "motion")
	w := New(root)
	w.LearnRoot()
	w.Close()
	if known, _ := w.Known("motion"); known {
		t.Error("known after Close")
	}
	var none *Watch
	if known, _ := none.Known("motion"); known {
		t.Error("a nil watch knows a folder")
	}
	if none.Held() != 0 {
		t.Error("a nil watch holds files")
	}
}
