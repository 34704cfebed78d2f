package filerecord_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agenthost/bots/record"
)

// oneFolderEach is a guard that refuses a bot whose workspace another
// bot has, and one whose model is "refused".
func oneFolderEach(r record.Record, others []record.Record) error {
	if r.Model == "refused" {
		return errors.New("the model is refused")
	}
	for _, o := range others {
		if o.Workspace == r.Workspace {
			return errors.New("the folder " + r.Workspace + " is taken by " + o.ID)
		}
	}
	return nil
}

func TestAGuardLeavesOutTheYoungerOfTwoBotsInOneFolder(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := open(t, dir, nil)
	older, younger := handBot("older"), handBot("younger")
	younger.Workspace = older.Workspace
	younger.CreatedAt = older.CreatedAt.Add(time.Hour)
	for _, r := range []record.Record{younger, older} {
		if _, err := s.Create(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	s.SetGuard(oneFolderEach)
	if _, err := s.Get(context.Background(), "older"); err != nil {
		t.Fatalf("the older bot: %v", err)
	}
	if _, err := s.Get(context.Background(), "younger"); !errors.Is(err, record.ErrNotFound) {
		t.Fatalf("the younger bot: %v, want it left out", err)
	}
	ps := s.Problems()
	if len(ps) != 1 || ps[0].Path != botFile(dir, "younger") || ps[0].Reason != "the folder /srv/bots/older is taken by older; the bot is left out" {
		t.Fatalf("problems %+v", ps)
	}
}

func TestAGuardRefusingAHandEditKeepsTheLastGoodRecord(t *testing.T) {
	t.Parallel()
	w := openWatched(t, t.TempDir())
	w.s.SetGuard(oneFolderEach)
	before := w.create(handBot("motion"))
	r := handBot("motion")
	r.Model = "refused"
	w.editByHand(r)
	path := botFile(w.dir, "motion")
	w.reportedAt(path, "the model is refused; the bot reads as it did before the edit")
	if extra := w.quiet(); len(extra) != 0 {
		t.Fatalf("changes for a refused edit: %+v", extra)
	}
	if got := w.get("motion"); !got.Record.Equal(before.Record) || got.ETag != before.ETag {
		t.Fatalf("Get answers %+v, want the last good record", got.Record)
	}

	// A bot made by hand that the guard refuses is left out.
	made := handBot("made")
	made.Workspace = before.Record.Workspace
	w.editByHand(made)
	w.reportedAt(botFile(w.dir, "made"), "the folder /srv/bots/motion is taken by motion; the bot is left out")
	if _, err := w.s.Get(context.Background(), "made"); !errors.Is(err, record.ErrNotFound) {
		t.Fatalf("the refused bot: %v, want it left out", err)
	}

	w.editByHand(handBot("motion")) // put back
	if c := w.next(time.Second); c.Kind != record.Updated || c.Entry.Record.Model != before.Record.Model {
		t.Fatalf("change %v %+v", c.Kind, c.Entry.Record)
	}
	w.noProblem(path)
}

func TestOpenRemovesTempFilesACrashLeft(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := open(t, dir, nil)
	if _, err := s.Create(context.Background(), handBot("motion")); err != nil {
		t.Fatal(err)
	}
	s.Close()
	old := time.Now().Add(-time.Hour)
	stale := []string{
		filepath.Join(dir, "bots", "motion", ".tmp-bot.md-123"),
		filepath.Join(dir, "bots", "motion", "sessions", ".tmp-row.json-456"),
		filepath.Join(dir, "bots", ".tmp-x-789"),
		filepath.Join(dir, "bots-gone", ".tmp-gone-1"),
	}
	fresh := filepath.Join(dir, "bots", "motion", ".tmp-bot.md-999") // a write begun after the load began
	for _, p := range append(stale, fresh) {
		writeFile(t, p, "half a write")
		mod := old
		if p == fresh {
			mod = time.Now().Add(time.Hour)
		}
		if err := os.Chtimes(p, mod, mod); err != nil {
			t.Fatal(err)
		}
	}
	s = open(t, dir, nil)
	s.WaitSwept() // the bot folders are swept in the background
	for _, p := range stale {
		if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s survived the restart: %v", p, err)
		}
	}
	if _, err := os.Lstat(fresh); err != nil {
		t.Errorf("a fresh temp file was removed: %v", err)
	}
	if _, err := s.Get(context.Background(), "motion"); err != nil {
		t.Fatal(err)
	}
}

// TestOpenRemovesTempFilesAKillJustBeforeARestartLeft: the configuration
// folder is this store's alone, so a temp file last modified before the
// load began is no write of anybody's, however young: a kill -9 a second
// before a restart leaves nothing after it.
func TestOpenRemovesTempFilesAKillJustBeforeARestartLeft(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := open(t, dir, nil)
	if _, err := s.Create(context.Background(), handBot("motion")); err != nil {
		t.Fatal(err)
	}
	s.Close()
	young := []string{
		filepath.Join(dir, "bots", "motion", ".tmp-bot.md-123"),
		filepath.Join(dir, "bots", "motion", "logs", ".tmp-chat.jsonl-456"),
		filepath.Join(dir, "bots", ".tmp-x-789"),
		filepath.Join(dir, "bots-gone", ".tmp-gone-1"),
	}
	killed := time.Now().Add(-time.Second) // a second before the restart
	for _, p := range young {
		writeFile(t, p, "half a write")
		if err := os.Chtimes(p, killed, killed); err != nil {
			t.Fatal(err)
		}
	}
	s = open(t, dir, nil)
	s.WaitSwept()
	for _, p := range young {
		if _, err := os.Lstat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s, left a moment before the restart, survived it: %v", p, err)
		}
	}
}
