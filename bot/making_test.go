package bot_test

import (
	"encoding/json"
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
// one holding a file of somebody else's, are kept; and the temp files of
// the service's own writes under -config go, however young.
func TestAStartRemovesTheFoldersOfMakesACrashCutShortAndNoFolderAPersonMade(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.make(t, soft, "kept", `{"name":"Kept"}`)
	mark := func(slug string, folders ...string) {
		t.Helper()
		data, _ := json.Marshal(map[string]any{"folders": folders})
		writeFile(t, filepath.Join(e.configDir, "making", slug), string(data))
	}
	folder := func(dir string, files ...string) string {
		t.Helper()
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			writeFile(t, filepath.Join(dir, f), "x")
		}
		return dir
	}
	empty := folder(filepath.Join(e.root, "empty"))
	written := folder(filepath.Join(e.root, "deep", "written"), "AGENTS.md", "CLAUDE.md", ".tmp-AGENTS.md-123")
	theirs := folder(filepath.Join(e.root, "theirs"), "AGENTS.md", "notes.txt")
	onPurpose := folder(filepath.Join(e.root, "on-purpose"))
	mark("empty", empty)
	mark("written", written, filepath.Join(e.root, "deep"))
	mark("theirs", theirs)
	mark("kept", filepath.Join(e.root, "kept"))
	// Temp files of a marker's write and of a bundled bot's stamp, killed a
	// moment before the restart.
	temps := []string{filepath.Join(e.configDir, "making", ".tmp-ghost-1"), filepath.Join(e.configDir, "bundled", ".tmp-house.json-2")}
	for _, p := range temps {
		writeFile(t, p, "half")
	}

	e.svc.Close()
	svc, err := bot.New(ctx(t), bot.Config{Store: e.store, ConfigDir: e.configDir, HostName: "testhost",
		Options: bot.Options{Root: e.root}, PersonaIn: bot.PersonaInFiles})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()

	for _, gone := range append([]string{empty, written, filepath.Join(e.root, "deep")}, temps...) {
		if exists(gone) {
			t.Errorf("%s, left by a make or a write a crash cut short, is still there", gone)
		}
	}
	for _, kept := range []string{filepath.Join(theirs, "notes.txt"), filepath.Join(theirs, "AGENTS.md"), onPurpose, filepath.Join(e.root, "kept", "AGENTS.md")} {
		if !exists(kept) {
			t.Errorf("%s is gone after the start", kept)
		}
	}
	if ents, err := os.ReadDir(filepath.Join(e.configDir, "making")); err != nil || len(ents) != 0 {
		t.Errorf("the markers left after the start: %v (%v)", ents, err)
	}
	if _, err := svc.Read(ctx(t), root, "kept"); err != nil {
		t.Errorf("the bot whose marker stayed is not read: %v", err)
	}
}

// TestAMakeLeavesNoMarkerBehind: a make that is written, and ones that
// are refused before or after their folder was made, leave no marker,
// and the refused ones no folder.
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
		if exists(filepath.Join(e.root, dir)) {
			t.Errorf("a refused make left %s", dir)
		}
	}
}
