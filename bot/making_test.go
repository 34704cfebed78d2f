package bot_test

import (
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/agenthost/bots/bot"
)

// TestAStartRemovesTheFoldersOfMakesACrashCutShortAndNoFolderAPersonMade:
// a crash after a make marked and made its folders, and perhaps wrote
// AGENTS.md and CLAUDE.md, but before its record was written, leaves a
// marker in <config>/making. The next start removes what such a make
// left when no bot took it: its persona files when they are all its
// folder holds, then the folders it made. A folder made under root with
// no marker, one whose make's marker names a bot that was written, and
// one holding a file of somebody else's, are kept.
func TestAStartRemovesTheFoldersOfMakesACrashCutShortAndNoFolderAPersonMade(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.make(t, soft, "kept", `{"name":"Kept"}`)
	mark := func(slug string, folders ...string) {
		t.Helper()
		data, _ := json.Marshal(map[string]any{"folders": folders})
		if err := os.MkdirAll(filepath.Join(e.configDir, "making"), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(e.configDir, "making", slug), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	mkdir := func(dir string, files ...string) string {
		t.Helper()
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if err := os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	empty := mkdir(filepath.Join(e.root, "empty"))
	written := mkdir(filepath.Join(e.root, "deep", "written"), "AGENTS.md", "CLAUDE.md", ".tmp-AGENTS.md-123")
	theirs := mkdir(filepath.Join(e.root, "theirs"), "AGENTS.md", "notes.txt")
	onPurpose := mkdir(filepath.Join(e.root, "on-purpose"))
	mark("empty", empty)
	mark("written", written, filepath.Join(e.root, "deep"))
	mark("theirs", theirs)
	mark("kept", filepath.Join(e.root, "kept"))
	// Temp files of a marker's write and of a bundled bot's stamp, killed a
	// moment before the restart.
	temps := []string{filepath.Join(e.configDir, "making", ".tmp-ghost-1"), filepath.Join(mkdir(filepath.Join(e.configDir, "bundled")), ".tmp-house.json-2")}
	for _, p := range temps {
		if err := os.WriteFile(p, []byte("half"), 0o600); err != nil {
			t.Fatal(err)
		}
	}

	e.svc.Close()
	svc, err := bot.New(ctx(t), bot.Config{Store: e.store, ConfigDir: e.configDir, HostName: "testhost",
		Options: bot.Options{Root: e.root}, PersonaIn: bot.PersonaInFiles})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()

	for _, gone := range append([]string{empty, written, filepath.Join(e.root, "deep")}, temps...) {
		if _, err := os.Lstat(gone); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s, left by a make a crash cut short, is still there (%v)", gone, err)
		}
	}
	for _, kept := range []string{filepath.Join(theirs, "notes.txt"), filepath.Join(theirs, "AGENTS.md"), onPurpose, filepath.Join(e.root, "kept", "AGENTS.md")} {
		if _, err := os.Lstat(kept); err != nil {
			t.Errorf("%s is gone after the start: %v", kept, err)
		}
	}
	if ents, err := os.ReadDir(filepath.Join(e.configDir, "making")); err != nil || len(ents) != 0 {
		t.Errorf("the markers left after the start: %v (%v)", ents, err)
	}
	if _, err := svc.Read(ctx(t), root, "kept"); err != nil {
		t.Errorf("the bot whose marker stayed is not read: %v", err)
	}
}

// TestAMakeLeavesNoMarkerBehind: a make that is written, and one that
// is refused, leave no marker, and the refused one no folder.
func TestAMakeLeavesNoMarkerBehind(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.make(t, soft, "one", `{"name":"One"}`)
	if _, err := e.svc.Make(ctx(t), soft, "two", []byte(`{"name":"Two","instructions":"## a heading"}`)); err == nil {
		t.Fatal("a make with a heading in its instructions was taken")
	}
	if _, err := e.svc.Make(ctx(t), maker, "three", []byte(`{"name":"Three","workspace":"`+filepath.Join(e.root, "one", "in")+`"}`)); err == nil {
		t.Fatal("a make inside one's folder was taken")
	}
	if ents, _ := os.ReadDir(filepath.Join(e.configDir, "making")); len(ents) != 0 {
		t.Errorf("markers left: %v", ents)
	}
	for _, dir := range []string{"two", "three", filepath.Join("one", "in")} {
		if _, err := os.Lstat(filepath.Join(e.root, dir)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("a refused make left %s (%v)", dir, err)
		}
	}
}
