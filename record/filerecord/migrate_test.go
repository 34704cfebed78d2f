package filerecord_test

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agenthost/bots/internal/waittest"
	"github.com/agenthost/bots/record/filerecord"
)

// The fixture: testdata/migrate/before is a configuration folder an older
// daemon left - bots/<slug>.md records, rows in bot-sessions/ and logs in
// bot-chats/ named by folder and by file name, the leftovers of a deleted
// bot (gone1), a deleted bot whose record came back (gone2), files no bot
// can be found for, a record file whose name is no slug, and places taken
// already by the same and by other bytes. testdata/migrate/after is what a
// load leaves of it.
const (
	beforeTree = "testdata/migrate/before"
	afterTree  = "testdata/migrate/after"
)

// copyTree copies the fixture tree from into a new temp folder.
func copyTree(t *testing.T, from string) string {
	t.Helper()
	dir := t.TempDir()
	err := filepath.WalkDir(from, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dir, rel), 0o700)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, rel), data, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// tree is every file under dir by its path there, with its bytes, and
// every empty folder, ending in /.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if d.IsDir() {
			if entries, err := os.ReadDir(path); err == nil && len(entries) == 0 {
				out[rel+"/"] = ""
			}
			return nil
		}
		data, err := os.ReadFile(path)
		out[rel] = string(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func sameTree(t *testing.T, dir string) {
	t.Helper()
	got, want := tree(t, dir), tree(t, afterTree)
	for _, k := range slices.Sorted(maps.Keys(want)) {
		if g, ok := got[k]; !ok {
			t.Errorf("missing %s", k)
		} else if g != want[k] {
			t.Errorf("%s holds %q, want %q", k, g, want[k])
		}
	}
	for _, k := range slices.Sorted(maps.Keys(got)) {
		if _, ok := want[k]; !ok {
			t.Errorf("left over: %s", k)
		}
	}
}

func TestLoadMovesTheOlderLayoutIntoEachBotsFolder(t *testing.T) {
	t.Parallel()
	dir := copyTree(t, beforeTree)
	var log waittest.Log
	s := open(t, dir, log.Logger(slog.LevelWarn))
	sameTree(t, dir)
	if got := ids(t, s); !slices.Equal(got, []string{"alpha", "beta"}) {
		t.Fatalf("loaded %v", got)
	}
	e, err := s.Get(context.Background(), "alpha")
	if err != nil || e.Record.Name != "Alpha" || e.Record.Instructions != "You were made before AGENTS.md." {
		t.Fatalf("alpha %+v, %v", e.Record, err)
	}
	p := func(rel string) string { return filepath.Join(dir, rel) }
	reported(t, s, &log, map[string]string{
		p("bots/Bad Name.md"):               "the file name is no bot slug",
		p("bot-chats/README"):               "its name names no bot: the file is left where it is",
		p("bot-chats/stranger/chat7.jsonl"): `there is no bot "stranger" to place it with: the file is left where it is`,
		p("bot-sessions/beta/dup.json"):     p("bots/beta/sessions/dup.json") + " is there already with other content",
		p("bots/gone2/bot.md"):              `the slug "gone2" was deleted and is spent`,
	})
}

func TestMigrationIsIdempotent(t *testing.T) {
	t.Parallel()
	dir := copyTree(t, beforeTree)
	open(t, dir, nil).Close()
	first := tree(t, dir)
	var log waittest.Log
	s := open(t, dir, slog.New(slog.NewTextHandler(&log, nil)))
	if again := tree(t, dir); !maps.Equal(first, again) {
		t.Fatalf("a second load changed the tree:\n%v\n%v", first, again)
	}
	if strings.Contains(log.String(), "migrated") || len(s.Problems()) != 5 {
		t.Fatalf("second load: problems %+v\n%s", s.Problems(), log.String())
	}
}

// TestMigrationStoppedAfterAnyStepIsFinishedByTheNextLoad stops the
// migration after each of its steps in turn, as a crash there would, then
// loads: the tree is always the one a whole migration leaves, and no file
// is lost.
func TestMigrationStoppedAfterAnyStepIsFinishedByTheNextLoad(t *testing.T) {
	t.Parallel()
	total := -1
	for n := 0; total < 0; n++ {
		dir := copyTree(t, beforeTree)
		steps, err := filerecord.MigrateStoppingAfter(dir, n)
		switch {
		case err == nil:
			total = steps
		case !errors.Is(err, filerecord.ErrStopped) || steps != n:
			t.Fatalf("stop after %d: %d steps, %v", n, steps, err)
		}
		s := open(t, dir, nil)
		sameTree(t, dir)
		if got := ids(t, s); !slices.Equal(got, []string{"alpha", "beta"}) {
			t.Fatalf("stopped after %d: loaded %v", n, got)
		}
		s.Close()
		if t.Failed() {
			t.Fatalf("stopped after %d of the steps", n)
		}
	}
	if total < 10 {
		t.Fatalf("the whole migration took %d steps", total)
	}
	t.Logf("stopped after each of %d steps", total)
}

func TestLeftoversOfADeletedBotAreRemovedAndAFolderWithItsBotFileKept(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "bots-gone", "old"), "")
	writeFile(t, filepath.Join(dir, "bots", "old", "logs", "x.jsonl"), "{}\n")
	writeFile(t, filepath.Join(dir, "bots-gone", "back"), "")
	writeFile(t, botFile(dir, "back"), strings.Replace(specExample, "id: motion", "id: back", 1))
	var log waittest.Log
	s := open(t, dir, log.Logger(slog.LevelWarn))
	if _, err := os.Stat(filepath.Join(dir, "bots", "old")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the deleted bot's folder is still there: %v", err)
	}
	if _, err := os.Stat(botFile(dir, "back")); err != nil {
		t.Fatalf("the folder holding a bot.md was removed: %v", err)
	}
	reported(t, s, &log, map[string]string{botFile(dir, "back"): "was deleted and is spent"})
}
