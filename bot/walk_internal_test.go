//go:build linux

package bot

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/agenthost/bots/bot/internal/rootwatch"
	"github.com/agenthost/bots/persona"
)

// TestTheFolderWatchAnswersForAFolderUntilItsEntryChanges: a folder found
// no link is known as such until its entry in root changes; a change to
// another entry leaves it known.
func TestTheFolderWatchAnswersForAFolderUntilItsEntryChanges(t *testing.T) {
	t.Parallel()
	root := filepath.Join(t.TempDir(), "bots")
	for _, d := range []string{"motion", "other"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	s := &Service{root: root, walk: rootwatch.New(root)}
	defer s.walk.Close()
	check := func(want bool) {
		t.Helper()
		if reason, err := s.folderEscape(filepath.Join(root, "motion")); err != nil || reason != "" {
			t.Fatalf("folder refused: %q, %v", reason, err)
		}
		if known, _ := s.walk.Known("motion"); known != want {
			t.Fatalf("known %v, want %v", known, want)
		}
	}
	check(true)
	if err := os.Remove(filepath.Join(root, "other")); err != nil {
		t.Fatal(err)
	}
	if known, _ := s.walk.Known("motion"); !known {
		t.Fatal("a change to another entry made motion unknown")
	}
	if err := os.Rename(filepath.Join(root, "motion"), filepath.Join(root, "motion2")); err != nil {
		t.Fatal(err)
	}
	if known, _ := s.walk.Known("motion"); known {
		t.Fatal("motion is still known once moved away")
	}
	if err := os.Rename(filepath.Join(root, "motion2"), filepath.Join(root, "motion")); err != nil {
		t.Fatal(err)
	}
	check(true)
	s.walk.Close()
	if known, _ := s.walk.Known("motion"); known {
		t.Fatal("known after close")
	}
	if reason, err := s.folderEscape(filepath.Join(root, "motion")); err != nil || reason != "" {
		t.Fatalf("after close: %q, %v", reason, err)
	}
}

// watchedBot is a root holding the folder motion with an AGENTS.md, its
// folder known to a watch as no link.
func watchedBot(t *testing.T) (s *Service, path string) {
	t.Helper()
	root := filepath.Join(t.TempDir(), "bots")
	if err := os.MkdirAll(filepath.Join(root, "motion"), 0o755); err != nil {
		t.Fatal(err)
	}
	path = filepath.Join(root, "motion", "AGENTS.md")
	if err := os.WriteFile(path, []byte("---\nname: Motion\n---\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	s = &Service{root: root, walk: rootwatch.New(root)}
	t.Cleanup(s.walk.Close)
	if reason, err := s.folderEscape(filepath.Dir(path)); err != nil || reason != "" {
		t.Fatalf("folder refused: %q, %v", reason, err)
	}
	return s, path
}

// sameAsLstat fails unless the watch's identity of path is what an lstat
// of the path says now.
func sameAsLstat(t *testing.T, s *Service, path string) {
	t.Helper()
	id, ok := s.walk.Identify(path)
	if !ok {
		t.Fatal("the watch gave no identity")
	}
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		t.Fatal(err)
	}
	want := persona.Identity{Dev: uint64(st.Dev), Ino: st.Ino, Size: st.Size, Mtime: st.Mtim.Nano(), Ctime: st.Ctim.Nano()}
	if id != want {
		t.Fatalf("identity %+v, lstat says %+v", id, want)
	}
}

func TestTheWatchsIdentityOfAgentsMDFollowsWritesAndRenamesOverIt(t *testing.T) {
	t.Parallel()
	s, path := watchedBot(t)
	sameAsLstat(t, s, path)
	sameAsLstat(t, s, path) // held now

	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("More.\n")
	f.Close()
	sameAsLstat(t, s, path)

	// as an editor saves: a new file renamed over the name
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte("---\nname: Other\n---\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	sameAsLstat(t, s, path)

	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.walk.Identify(path); ok {
		t.Fatal("an identity for a removed AGENTS.md")
	}
	if err := os.Symlink(tmp, path); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.walk.Identify(path); ok {
		t.Fatal("an identity for an AGENTS.md that is a link")
	}
}

// The identity of a held AGENTS.md is kept, with no fstat, while the
// file's own watch says nothing changed it; every change to it - a write,
// a truncation, its mode, its times, a write through another of its names
// outside root - lets it go, and the next look takes it again.
func TestTheWatchKeepsAnUnchangedAgentsMDsIdentityAndLetsItGoAtAnyChangeThroughAnyName(t *testing.T) {
	t.Parallel()
	s, path := watchedBot(t)
	sameAsLstat(t, s, path)
	sameAsLstat(t, s, path)
	kept := func() bool { return s.walk.KeepsIdentity("motion") }
	if !kept() {
		t.Fatal("the identity of an unchanged, held AGENTS.md is not kept")
	}
	other := filepath.Join(t.TempDir(), "also-agents.md") // a name outside root: no folder watch sees it
	if err := os.Link(path, other); err != nil {
		t.Fatal(err)
	}
	sameAsLstat(t, s, path) // the link changed its ctime
	past := time.Now().Add(-time.Hour)
	for _, c := range []struct {
		name   string
		change func() error
	}{
		{"WriteThroughAnotherName", func() error {
			f, err := os.OpenFile(other, os.O_APPEND|os.O_WRONLY, 0)
			if err != nil {
				return err
			}
			_, err = f.WriteString("Planted.\n")
			return errors.Join(err, f.Close())
		}},
		{"Truncate", func() error { return os.Truncate(other, 3) }},
		{"Mode", func() error { return os.Chmod(path, 0o600) }},
		{"Times", func() error { return os.Chtimes(other, past, past) }},
	} {
		sameAsLstat(t, s, path)
		if !kept() {
			t.Fatalf("before %s: the identity is not kept", c.name)
		}
		if err := c.change(); err != nil {
			t.Fatal(err)
		}
		sameAsLstat(t, s, path)
	}
}

func TestTheWatchGivesNoIdentityInAFolderMovedAside(t *testing.T) {
	t.Parallel()
	s, path := watchedBot(t)
	sameAsLstat(t, s, path)
	folder := filepath.Dir(path)
	if err := os.Rename(folder, folder+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(folder, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("---\nname: New\n---\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.walk.Identify(path); ok {
		t.Fatal("an identity before the new folder was checked")
	}
	if reason, err := s.folderEscape(folder); err != nil || reason != "" {
		t.Fatalf("folder refused: %q, %v", reason, err)
	}
	sameAsLstat(t, s, path)
}

func TestTheWatchHoldsAtMostMaxHeldFiles(t *testing.T) {
	t.Parallel()
	root := filepath.Join(t.TempDir(), "bots")
	s := &Service{root: root, walk: rootwatch.New(root)}
	t.Cleanup(s.walk.Close)
	for i := range rootwatch.MaxHeld + 10 {
		dir := filepath.Join(root, fmt.Sprintf("bot%d", i))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, "AGENTS.md")
		if err := os.WriteFile(path, []byte("---\nname: B\n---\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if reason, err := s.folderEscape(dir); err != nil || reason != "" {
			t.Fatalf("folder refused: %q, %v", reason, err)
		}
		sameAsLstat(t, s, path)
	}
	if held := s.walk.Held(); held > rootwatch.MaxHeld {
		t.Fatalf("%d files held, at most %d", held, rootwatch.MaxHeld)
	}
}

// TestALearnedRootKnowsItsFoldersButNoLinkAndForgetsAFolderSwappedForALink:
// one listing of root makes its folders known, not its links or files,
// and a folder swapped for a link afterwards is refused at the next check.
func TestALearnedRootKnowsItsFoldersButNoLinkAndForgetsAFolderSwappedForALink(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	root := filepath.Join(base, "bots")
	if err := os.MkdirAll(filepath.Join(root, "motion"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(base, "away"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(base, "away"), filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "file"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	s := &Service{root: root, walk: rootwatch.New(root)}
	defer s.walk.Close()
	s.walk.LearnRoot()
	for name, want := range map[string]bool{"motion": true, "link": false, "file": false} {
		if known, _ := s.walk.Known(name); known != want {
			t.Errorf("%s known %v, want %v", name, known, want)
		}
	}
	if reason, err := s.folderEscape(filepath.Join(root, "link")); err != nil || reason == "" {
		t.Fatalf("a link under root was not refused: %q, %v", reason, err)
	}
	if err := os.Rename(filepath.Join(root, "motion"), filepath.Join(base, "motion-aside")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(base, "away"), filepath.Join(root, "motion")); err != nil {
		t.Fatal(err)
	}
	if reason, err := s.folderEscape(filepath.Join(root, "motion")); err != nil || reason == "" {
		t.Fatalf("a folder swapped for a link after the listing was not refused: %q, %v", reason, err)
	}
}

// checkedIdentity is the identity of path's AGENTS.md that the folder
// check of its folder takes (as a read makes it), failing unless the
// folder is accepted.
func checkedIdentity(t *testing.T, s *Service, path string) agentsIdentity {
	t.Helper()
	var ident agentsIdentity
	if reason, err := s.folderEscapeIdentify(filepath.Dir(path), &ident); err != nil || reason != "" {
		t.Fatalf("folder refused: %q, %v", reason, err)
	}
	return ident
}

// The identity a folder check takes with its one look at what changed is
// what an lstat of AGENTS.md says at that moment, through writes, a
// rename over the file, its removal and a link in its place.
func TestTheFolderChecksIdentityOfAgentsMDIsWhatLstatSaysNow(t *testing.T) {
	t.Parallel()
	s, path := watchedBot(t)
	same := func() {
		t.Helper()
		ident := checkedIdentity(t, s, path)
		if !ident.ok {
			t.Fatal("the folder check took no identity")
		}
		var st unix.Stat_t
		if err := unix.Lstat(path, &st); err != nil {
			t.Fatal(err)
		}
		want := persona.Identity{Dev: uint64(st.Dev), Ino: st.Ino, Size: st.Size, Mtime: st.Mtim.Nano(), Ctime: st.Ctim.Nano()}
		if ident.id != want {
			t.Fatalf("identity %+v, lstat says %+v", ident.id, want)
		}
	}
	same()
	same() // held now
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("More.\n")
	f.Close()
	same()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte("---\nname: Other\n---\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
	same()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if checkedIdentity(t, s, path).ok {
		t.Fatal("an identity for a removed AGENTS.md")
	}
	if err := os.Symlink(tmp, path); err != nil {
		t.Fatal(err)
	}
	if checkedIdentity(t, s, path).ok {
		t.Fatal("an identity for an AGENTS.md that is a link")
	}
}

// A folder swapped for a link is refused by the check that would take the
// identity, which then takes none.
func TestTheFolderCheckTakesNoIdentityOfAFolderSwappedForALink(t *testing.T) {
	t.Parallel()
	s, path := watchedBot(t)
	checkedIdentity(t, s, path)
	folder := filepath.Dir(path)
	if err := os.Rename(folder, folder+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(folder+".old", folder); err != nil {
		t.Fatal(err)
	}
	var ident agentsIdentity
	if reason, err := s.folderEscapeIdentify(folder, &ident); err != nil || reason == "" {
		t.Fatalf("a folder swapped for a link was accepted: %q, %v", reason, err)
	}
	if ident.ok {
		t.Fatal("an identity through a folder swapped for a link")
	}
}

// TestAFrozenWatchAnswersAsOfTheFreezeAndSeesWhatChangedMeanwhileOnceThawed:
// a freeze takes what changed before it (a folder swapped for a link is
// refused in the pass), answers a pass from then on without a look at
// what changes, and the first check after the thaw sees a swap made
// during the pass.
func TestAFrozenWatchAnswersAsOfTheFreezeAndSeesWhatChangedMeanwhileOnceThawed(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	root := filepath.Join(base, "bots")
	for _, d := range []string{"motion", "swapped", "other"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(base, "away"), 0o755); err != nil {
		t.Fatal(err)
	}
	swap := func(name string) {
		t.Helper()
		if err := os.Rename(filepath.Join(root, name), filepath.Join(base, name+"-aside")); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(base, "away"), filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	s := &Service{root: root, walk: rootwatch.New(root)}
	defer s.walk.Close()
	refused := func(name string) bool {
		t.Helper()
		reason, err := s.folderEscape(filepath.Join(root, name))
		if err != nil {
			t.Fatal(err)
		}
		return reason != ""
	}
	s.walk.LearnRoot()
	swap("swapped")
	thaw := s.walk.Freeze()
	if !refused("swapped") {
		t.Fatal("a folder swapped for a link before the freeze was not refused in the pass")
	}
	if refused("motion") {
		t.Fatal("a folder was refused in the pass")
	}
	swap("motion")
	if known, _ := s.walk.Known("motion"); !known {
		t.Fatal("a frozen watch looked at what changed during the pass")
	}
	thaw()
	thaw() // a second thaw changes nothing
	if !refused("motion") {
		t.Fatal("a folder swapped for a link during the pass was not refused once thawed")
	}
	swap("other")
	if !refused("other") {
		t.Fatal("a folder swapped for a link after the thaw was not refused")
	}
}
