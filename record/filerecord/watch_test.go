package filerecord_test

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/bots/internal/waittest"
	"github.com/agenthost/bots/record"
	"github.com/agenthost/bots/record/filerecord"
)

// sentinel is the bot a watched test edits by hand to know that every
// event before it has been taken.
const sentinel = "zz-sentinel"

// watched is a watched store over a temp folder, with a subscription to
// its change feed opened before anything happened.
type watched struct {
	t       *testing.T
	dir     string
	s       *filerecord.Store
	changes <-chan record.Change
	log     *waittest.Log
	marks   int
}

func openWatched(t *testing.T, dir string) *watched {
	t.Helper()
	w := &watched{t: t, dir: dir, log: &waittest.Log{}}
	s, err := filerecord.Open(context.Background(), filerecord.Config{ConfigDir: dir, Logger: w.log.Logger(slog.LevelWarn), Watch: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	w.s = s
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if w.changes, err = s.Watch(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, sentinel); errors.Is(err, record.ErrNotFound) {
		if _, err := s.Create(ctx, handBot(sentinel)); err != nil {
			t.Fatal(err)
		}
		w.next(time.Second)
	}
	return w
}

// handBot is a small bot as a person would keep it.
func handBot(id string) record.Record {
	r := smallBot(id)
	r.Workspace = "/srv/bots/" + id
	return r
}

// next returns the next change, failing when none comes within d.
func (w *watched) next(d time.Duration) record.Change {
	w.t.Helper()
	// How soon a change comes is BenchmarkHandSaveToChange's to measure;
	// here a loaded machine running -race gets room, and a change that
	// never comes still fails.
	d = max(d, changeWait)
	select {
	case c := <-w.changes:
		return c
	case <-time.After(d):
		w.t.Fatalf("no change within %v", d)
	}
	return record.Change{}
}

// changeWait bounds every wait for a change in these tests.
const changeWait = 10 * time.Second

// quiet waits until every event before it has been taken and every look the
// watch planned is made, and returns the changes that came meanwhile: it
// edits the sentinel by hand twice, reading changes up to the sentinel's
// each time, and waits for the watch to go idle in between.
func (w *watched) quiet() []record.Change {
	w.t.Helper()
	var extra []record.Change
	for range 2 {
		w.marks++
		path := botFile(w.dir, sentinel)
		r := handBot(sentinel)
		r.Model = "mark-" + strings.Repeat("x", w.marks)
		writeFile(w.t, path, string(filerecord.Encode(r)))
		for {
			c := w.next(5 * time.Second)
			if c.ID == sentinel && c.Entry.Record.Model == r.Model {
				break
			}
			extra = append(extra, c)
		}
		w.idle()
	}
	return extra
}

// idle polls until the watch has nothing left to read.
func (w *watched) idle() {
	w.t.Helper()
	if !waittest.Within(10*time.Second, func() bool { return w.s.WatchPending() == 0 }) {
		w.t.Fatal("the watch does not go idle")
	}
}

// problem polls until a problem stands at path, and returns it.
func (w *watched) problem(path string) record.Problem {
	w.t.Helper()
	var found record.Problem
	if !waittest.Within(5*time.Second, func() bool {
		for _, p := range w.s.Problems() {
			if p.Path == path {
				found = p
				return true
			}
		}
		return false
	}) {
		w.t.Fatalf("no problem at %s: %+v", path, w.s.Problems())
	}
	return found
}

// noProblem checks that no problem stands at path.
func (w *watched) noProblem(path string) {
	w.t.Helper()
	for _, p := range w.s.Problems() {
		if p.Path == path {
			w.t.Fatalf("problem still standing: %+v", p)
		}
	}
}

// reportedAt checks a problem at path: it says reason, has a time, and a
// Warn line names the path.
func (w *watched) reportedAt(path, reason string) {
	w.t.Helper()
	p := w.problem(path)
	if !strings.Contains(p.Reason, reason) || p.Since.IsZero() {
		w.t.Fatalf("problem %+v does not say %q", p, reason)
	}
	if !strings.Contains(w.log.String(), "level=WARN") || !strings.Contains(w.log.String(), path) {
		w.t.Fatalf("no Warn line names %s:\n%s", path, w.log)
	}
}

func (w *watched) get(id string) record.Entry {
	w.t.Helper()
	e, err := w.s.Get(context.Background(), id)
	if err != nil {
		w.t.Fatal(err)
	}
	return e
}

func (w *watched) create(r record.Record) record.Entry {
	w.t.Helper()
	e, err := w.s.Create(context.Background(), r)
	if err != nil {
		w.t.Fatal(err)
	}
	if c := w.next(time.Second); c.Kind != record.Created || c.ID != r.ID {
		w.t.Fatalf("change %v %s, want created %s", c.Kind, c.ID, r.ID)
	}
	return e
}

// saveOnce checks that a save made by save is one Updated change, within a
// second, giving the record the saved file holds, and nothing else.
func saveOnce(t *testing.T, save func(t *testing.T, path string, data []byte)) {
	w := openWatched(t, t.TempDir())
	before := w.create(handBot("motion"))
	r := before.Record
	r.Model = "edited-by-hand"
	r.Labels = []string{"by-hand"}
	r.Instructions = "Edited by hand.\nTwo lines."
	data := filerecord.Encode(r)
	saved := time.Now()
	save(t, botFile(w.dir, "motion"), data)
	c := w.next(time.Second)
	t.Logf("change %v after %v", c.Kind, time.Since(saved))
	if c.Kind != record.Updated || c.ID != "motion" || !c.Entry.Record.Equal(r) {
		t.Fatalf("change %v %s %+v, want updated to %+v", c.Kind, c.ID, c.Entry.Record, r)
	}
	if extra := w.quiet(); len(extra) != 0 {
		t.Fatalf("more than one change: %+v", extra)
	}
	got := w.get("motion")
	if !got.Record.Equal(r) || got.ETag != c.Entry.ETag || got.ETag == before.ETag {
		t.Fatalf("Get answers %+v %s, want the saved record at etag %s", got.Record, got.ETag, c.Entry.ETag)
	}
	if p := w.s.Problems(); len(p) != 0 {
		t.Fatalf("problems: %+v", p)
	}
	if got := readBytes(t, botFile(w.dir, "motion")); string(got) != string(data) {
		t.Fatalf("the file is not what was saved:\n%s", got)
	}
}

func readBytes(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// pause is the deliberate pause of an editor that truncates, or deletes,
// and writes a moment later: longer than the watch waits for quiet, shorter
// than it waits for a broken file to settle.
const pause = 150 * time.Millisecond

func TestHandSaveWrittenInPlaceIsOneUpdate(t *testing.T) {
	t.Parallel()
	saveOnce(t, func(t *testing.T, path string, data []byte) {
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
	})
}

func TestHandSaveTruncatedThenWrittenAfterAPauseIsOneUpdate(t *testing.T) {
	t.Parallel()
	saveOnce(t, func(t *testing.T, path string, data []byte) {
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if err := f.Truncate(0); err != nil {
			t.Fatal(err)
		}
		time.Sleep(pause) // the editor's pause between truncating and writing
		half := len(data) / 2
		if _, err := f.Write(data[:half]); err != nil {
			t.Fatal(err)
		}
		time.Sleep(pause) // and a pause half way through the write
		if _, err := f.Write(data[half:]); err != nil {
			t.Fatal(err)
		}
	})
}

func TestHandSaveToATempFileRenamedOverIsOneUpdate(t *testing.T) {
	t.Parallel()
	saveOnce(t, func(t *testing.T, path string, data []byte) {
		tmp := filepath.Join(filepath.Dir(path), ".bot.md.swp")
		if err := os.WriteFile(tmp, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	})
}

func TestHandSaveDeletedThenMadeAgainIsOneUpdate(t *testing.T) {
	t.Parallel()
	saveOnce(t, func(t *testing.T, path string, data []byte) {
		if err := os.Remove(path); err != nil {
			t.Fatal(err)
		}
		time.Sleep(pause) // the editor's pause between deleting and writing
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
	})
}

func TestHandSaveVimStyleBackupThenNewFileIsOneUpdate(t *testing.T) {
	t.Parallel()
	saveOnce(t, func(t *testing.T, path string, data []byte) {
		dir := filepath.Dir(path)
		// vim checks that it may write the folder with a file named 4913.
		probe := filepath.Join(dir, "4913")
		if err := os.WriteFile(probe, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		os.Remove(probe)
		backup := path + "~"
		if err := os.Rename(path, backup); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Remove(backup); err != nil {
			t.Fatal(err)
		}
	})
}

// editByHand writes the bot's file as r, in place.
func (w *watched) editByHand(r record.Record) {
	w.t.Helper()
	writeFile(w.t, botFile(w.dir, r.ID), string(filerecord.Encode(r)))
}

func TestHandEditOfOwnerIsRefusedAndReported(t *testing.T) {
	t.Parallel()
	w := openWatched(t, t.TempDir())
	w.create(handBot("motion"))
	r := handBot("motion")
	r.Owner = "user:someone-else"
	r.Model = "also-edited"
	w.editByHand(r)
	c := w.next(time.Second)
	if c.Kind != record.Updated || c.Entry.Record.Owner != "user:soft" || c.Entry.Record.Model != "also-edited" {
		t.Fatalf("change %v %+v, want updated, owner kept, model taken", c.Kind, c.Entry.Record)
	}
	path := botFile(w.dir, "motion")
	w.reportedAt(path, `the owner may not be changed by hand: the file says "user:someone-else" and the bot keeps "user:soft"`)
	if got := w.get("motion"); got.Record.Owner != "user:soft" || got.ETag != c.Entry.ETag {
		t.Fatalf("Get answers owner %s etag %s", got.Record.Owner, got.ETag)
	}
	w.editByHand(handBot("motion")) // put back
	if c := w.next(time.Second); c.Kind != record.Updated || c.Entry.Record.Owner != "user:soft" {
		t.Fatalf("change %v %+v", c.Kind, c.Entry.Record)
	}
	w.noProblem(path)
}

func TestHandEditOfWorkspaceIsRefusedAndReported(t *testing.T) {
	t.Parallel()
	w := openWatched(t, t.TempDir())
	w.create(handBot("motion"))
	r := handBot("motion")
	r.Workspace = "/srv/bots/elsewhere"
	w.editByHand(r)
	c := w.next(time.Second)
	if c.Kind != record.Updated || c.Entry.Record.Workspace != "/srv/bots/motion" {
		t.Fatalf("change %v %+v, want updated with the workspace kept", c.Kind, c.Entry.Record)
	}
	w.reportedAt(botFile(w.dir, "motion"), `the workspace may not be changed by hand: the file says "/srv/bots/elsewhere" and the bot keeps "/srv/bots/motion"`)
	if got := w.get("motion"); got.Record.Workspace != "/srv/bots/motion" {
		t.Fatalf("Get answers workspace %s", got.Record.Workspace)
	}
}

// badEdit checks that a hand edit writing text is reported with reason,
// changes nothing a read answers, and that fixing the file takes it again.
func badEdit(t *testing.T, text, reason string) {
	w := openWatched(t, t.TempDir())
	before := w.create(handBot("motion"))
	path := botFile(w.dir, "motion")
	writeFile(t, path, text)
	w.reportedAt(path, reason)
	if extra := w.quiet(); len(extra) != 0 {
		t.Fatalf("changes for a file that is not a bot record: %+v", extra)
	}
	if got := w.get("motion"); !got.Record.Equal(before.Record) || got.ETag != before.ETag {
		t.Fatalf("Get answers %+v %s, want the last good record", got.Record, got.ETag)
	}
	fixed := handBot("motion")
	fixed.Color = "red"
	w.editByHand(fixed)
	if c := w.next(time.Second); c.Kind != record.Updated || c.Entry.Record.Color != "red" {
		t.Fatalf("change %v %+v after the fix", c.Kind, c.Entry.Record)
	}
	w.noProblem(path)
}

func TestHandEditWithAFieldOfTheWrongTypeIsReportedAndTheLastGoodRecordKept(t *testing.T) {
	t.Parallel()
	badEdit(t, strings.Replace(string(filerecord.Encode(handBot("motion"))), "body: robot", "body: [robot, cat]", 1), "not a bot record")
}

func TestHandEditWithAColourThatIsNoColourIsReportedAndTheLastGoodRecordKept(t *testing.T) {
	t.Parallel()
	badEdit(t, strings.Replace(string(filerecord.Encode(handBot("motion"))), "color: teal", "color: mauve", 1), `color "mauve" is neither`)
}

func TestHandEditWithBrokenYAMLIsReportedAndTheLastGoodRecordKept(t *testing.T) {
	t.Parallel()
	badEdit(t, "---\nid: motion\nlabels: [broken\n---\n", "invalid YAML")
}

func TestHandEditNamingAnotherIDIsReportedAndLeftOut(t *testing.T) {
	t.Parallel()
	badEdit(t, strings.Replace(string(filerecord.Encode(handBot("motion"))), "id: motion", "id: other", 1), `names id "other" but the file is in the folder of "motion"`)
}

func TestFolderDroppedInNamingAnotherIDIsReportedAndLeftOut(t *testing.T) {
	t.Parallel()
	w := openWatched(t, t.TempDir())
	writeFile(t, botFile(w.dir, "copy"), string(filerecord.Encode(handBot("motion"))))
	w.reportedAt(botFile(w.dir, "copy"), `names id "motion" but the file is in the folder of "copy"`)
	if extra := w.quiet(); len(extra) != 0 {
		t.Fatalf("changes: %+v", extra)
	}
	if _, err := w.s.Get(context.Background(), "copy"); !errors.Is(err, record.ErrNotFound) {
		t.Fatalf("Get copy: %v", err)
	}
}

func TestFolderDroppedInByHandIsCreated(t *testing.T) {
	t.Parallel()
	w := openWatched(t, t.TempDir())
	r := handBot("fresh")
	writeFile(t, botFile(w.dir, "fresh"), string(filerecord.Encode(r)))
	c := w.next(time.Second)
	if c.Kind != record.Created || c.ID != "fresh" || !c.Entry.Record.Equal(r) {
		t.Fatalf("change %v %s %+v", c.Kind, c.ID, c.Entry.Record)
	}
	if extra := w.quiet(); len(extra) != 0 {
		t.Fatalf("more changes: %+v", extra)
	}
	if got := w.get("fresh"); got.ETag != c.Entry.ETag {
		t.Fatalf("etag %s, change said %s", got.ETag, c.Entry.ETag)
	}
}

func TestFolderRemovedByHandIsDeletedAndLeavesATombstone(t *testing.T) {
	t.Parallel()
	w := openWatched(t, t.TempDir())
	e := w.create(handBot("motion"))
	if err := os.RemoveAll(filepath.Join(w.dir, "bots", "motion")); err != nil {
		t.Fatal(err)
	}
	c := w.next(2 * time.Second) // a removal waits to settle: it is for ever
	if c.Kind != record.Deleted || c.ID != "motion" || c.Entry.ETag != e.ETag {
		t.Fatalf("change %v %s", c.Kind, c.ID)
	}
	if gone, _ := w.s.Gone(context.Background(), "motion"); !gone {
		t.Fatal("no tombstone")
	}
	if _, err := os.Stat(filepath.Join(w.dir, "bots-gone", "motion")); err != nil {
		t.Fatalf("tombstone file: %v", err)
	}
	if _, err := w.s.Create(context.Background(), handBot("motion")); !errors.Is(err, record.ErrGone) {
		t.Fatalf("Create after a delete by hand: %v, want ErrGone", err)
	}
	if extra := w.quiet(); len(extra) != 0 {
		t.Fatalf("more changes: %+v", extra)
	}
}

func TestSpentSlugComingBackIsReportedLeftOutAndItsFolderKept(t *testing.T) {
	t.Parallel()
	w := openWatched(t, t.TempDir())
	w.create(handBot("motion"))
	if err := w.s.Delete(context.Background(), "motion", ""); err != nil {
		t.Fatal(err)
	}
	if c := w.next(time.Second); c.Kind != record.Deleted {
		t.Fatalf("change %v", c.Kind)
	}
	path := botFile(w.dir, "motion")
	writeFile(t, path, string(filerecord.Encode(handBot("motion"))))
	w.reportedAt(path, `the slug "motion" was deleted and is spent`)
	if extra := w.quiet(); len(extra) != 0 {
		t.Fatalf("changes: %+v", extra)
	}
	if _, err := w.s.Get(context.Background(), "motion"); !errors.Is(err, record.ErrNotFound) {
		t.Fatalf("Get: %v", err)
	}
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the folder was not kept: %v", err)
	}
	// notify lost the folder's watch when the delete moved it aside; the
	// folder made again is watched all the same: its file removed, the
	// problem goes.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if !waittest.Within(5*time.Second, func() bool { return len(w.s.Problems()) == 0 }) {
		t.Fatalf("problems stand after the file went: %+v", w.s.Problems())
	}
}

func TestFolderRenamedAwayAndBackIsStillWatched(t *testing.T) {
	t.Parallel()
	w := openWatched(t, t.TempDir())
	w.create(handBot("motion"))
	folder := filepath.Join(w.dir, "bots", "motion")
	aside := filepath.Join(w.dir, "bots", "motion-aside")
	if err := os.Rename(folder, aside); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(aside, folder); err != nil {
		t.Fatal(err)
	}
	w.quiet()
	r := handBot("motion")
	r.Model = "after-the-round-trip"
	w.editByHand(r)
	for {
		c := w.next(2 * time.Second)
		if c.ID == "motion" && c.Kind == record.Updated && c.Entry.Record.Model == r.Model {
			break
		}
		if c.ID == "motion" && c.Kind == record.Deleted {
			t.Fatalf("the bot was deleted by a rename away and back")
		}
	}
}

func TestStoresOwnWritesDoNotEchoAsHandEdits(t *testing.T) {
	t.Parallel()
	w := openWatched(t, t.TempDir())
	ctx := context.Background()
	e := w.create(handBot("motion"))
	for i := range 5 {
		r := e.Record
		r.Model = "model-" + string(rune('a'+i))
		var err error
		if e, err = w.s.Update(ctx, r, e.ETag); err != nil {
			t.Fatal(err)
		}
		if c := w.next(time.Second); c.Kind != record.Updated || c.Entry.ETag != e.ETag {
			t.Fatalf("change %v %s, want the update's own", c.Kind, c.Entry.ETag)
		}
	}
	if err := w.s.Delete(ctx, "motion", e.ETag); err != nil {
		t.Fatal(err)
	}
	if c := w.next(time.Second); c.Kind != record.Deleted {
		t.Fatalf("change %v", c.Kind)
	}
	if extra := w.quiet(); len(extra) != 0 {
		t.Fatalf("the store's writes echoed: %+v", extra)
	}
	if p := w.s.Problems(); len(p) != 0 {
		t.Fatalf("problems: %+v", p)
	}
}

func TestMissingBotFileIsReportedAndTheBotKept(t *testing.T) {
	t.Parallel()
	w := openWatched(t, t.TempDir())
	e := w.create(handBot("motion"))
	path := botFile(w.dir, "motion")
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	w.reportedAt(path, "the file is missing; the bot keeps its last record")
	if got := w.get("motion"); got.ETag != e.ETag {
		t.Fatalf("Get answers etag %s", got.ETag)
	}
	w.editByHand(handBot("motion"))
	if c := w.next(time.Second); c.Kind != record.Updated {
		t.Fatalf("change %v", c.Kind)
	}
	w.noProblem(path)
}

func TestUpdateOverAHandEditNotYetSeenIsAConflict(t *testing.T) {
	t.Parallel()
	w := openWatched(t, t.TempDir())
	e := w.create(handBot("motion"))
	r := handBot("motion")
	r.Model = "by-hand"
	w.editByHand(r) // the update below comes before the watch reads it
	mine := e.Record
	mine.Provider = "other"
	_, err := w.s.Update(context.Background(), mine, e.ETag)
	if !errors.Is(err, record.ErrConflict) {
		t.Fatalf("Update over an unseen hand edit: %v, want ErrConflict", err)
	}
	if got := w.get("motion"); got.Record.Model != "by-hand" || got.Record.Provider != "claude" {
		t.Fatalf("Get answers %+v, want the hand edit", got.Record)
	}
	if c := w.next(time.Second); c.Kind != record.Updated || c.Entry.Record.Model != "by-hand" {
		t.Fatalf("change %v %+v", c.Kind, c.Entry.Record)
	}
	if extra := w.quiet(); len(extra) != 0 {
		t.Fatalf("the hand edit was taken twice: %+v", extra)
	}
}

func TestUpdateOverABrokenHandEditIsAConflictNamingTheFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := open(t, dir, nil) // not watching: a write reads the file all the same
	e, err := s.Create(context.Background(), handBot("motion"))
	if err != nil {
		t.Fatal(err)
	}
	path := botFile(dir, "motion")
	writeFile(t, path, "---\nid: motion\ncolor: mauve\n---\n")
	_, err = s.Update(context.Background(), e.Record, e.ETag)
	if !errors.Is(err, record.ErrConflict) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "mauve") {
		t.Fatalf("Update over a broken file: %v", err)
	}
	if got := readBytes(t, path); string(got) != "---\nid: motion\ncolor: mauve\n---\n" {
		t.Fatalf("the person's file was written over:\n%s", got)
	}
}

func TestWatchStopsOnCloseWithNoGoroutineLeft(t *testing.T) {
	// notify starts its own goroutines once per process, at the first watch
	// of any store: take the count after one.
	openWatched(t, t.TempDir()).s.Close()
	waitGoroutines(t, runtime.NumGoroutine())
	base := runtime.NumGoroutine()
	for range 3 {
		w := openWatched(t, t.TempDir())
		w.create(handBot("motion"))
		w.editByHand(handBot("motion"))
		w.next(time.Second)
		if err := w.s.Close(); err != nil {
			t.Fatal(err)
		}
		if _, ok := <-w.changes; ok {
			t.Fatal("the change feed is open after Close")
		}
		waitGoroutines(t, base)
	}
}

// waitGoroutines polls until at most n goroutines run.
func waitGoroutines(t *testing.T, n int) {
	t.Helper()
	if !waittest.Within(5*time.Second, func() bool { return runtime.NumGoroutine() <= n }) {
		buf := make([]byte, 1<<20)
		t.Fatalf("%d goroutines, want at most %d:\n%s", runtime.NumGoroutine(), n, buf[:runtime.Stack(buf, true)])
	}
}

func TestFolderRemovedAndMadeAgainAtOnceIsOneUpdateAndStaysWatched(t *testing.T) {
	t.Parallel()
	w := openWatched(t, t.TempDir())
	w.create(handBot("motion"))
	folder := filepath.Join(w.dir, "bots", "motion")
	if err := os.RemoveAll(folder); err != nil {
		t.Fatal(err)
	}
	r := handBot("motion")
	r.Model = "restored-copy"
	writeFile(t, botFile(w.dir, "motion"), string(filerecord.Encode(r)))
	if c := w.next(time.Second); c.Kind != record.Updated || c.Entry.Record.Model != r.Model {
		t.Fatalf("change %v %+v, want one update", c.Kind, c.Entry.Record)
	}
	if extra := w.quiet(); len(extra) != 0 {
		t.Fatalf("more changes: %+v", extra)
	}
	// The folder made again is watched: an edit in place is heard.
	r.Model = "edited-in-place"
	w.editByHand(r)
	if c := w.next(time.Second); c.Kind != record.Updated || c.Entry.Record.Model != r.Model {
		t.Fatalf("change %v %+v", c.Kind, c.Entry.Record)
	}
}

func TestBotsLoadedBeforeTheWatchIsSetAreWatched(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeBots(t, dir, 300)
	w := openWatched(t, dir)
	w.s.WaitWatched()
	r := smallBot("bot-00150")
	r.Model = "edited"
	w.editByHand(r)
	if c := w.next(time.Second); c.Kind != record.Updated || c.ID != r.ID || c.Entry.Record.Model != "edited" {
		t.Fatalf("change %v %s %+v", c.Kind, c.ID, c.Entry.Record)
	}
}

func TestWatchProblemsTellsWhenAProblemIsReportedAndWhenItClears(t *testing.T) {
	t.Parallel()
	w := openWatched(t, t.TempDir())
	w.create(handBot("motion"))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	told := w.s.WatchProblems(ctx)
	path := botFile(w.dir, "motion")
	wait := func(what string, standing bool) {
		t.Helper()
		for {
			select {
			case <-told:
			case <-time.After(10 * time.Second):
				t.Fatalf("WatchProblems told nothing of %s: %+v", what, w.s.Problems())
			}
			has := false
			for _, p := range w.s.Problems() {
				has = has || p.Path == path
			}
			if has == standing {
				return
			}
		}
	}
	r := handBot("motion")
	r.Owner = "user:someone-else"
	w.editByHand(r)
	wait("a refused hand edit", true)
	w.editByHand(handBot("motion")) // put back
	wait("the fix", false)

	// A store closed closes the channel.
	w.s.Close()
	for range told {
	}
}

func TestAStoreWhoseFolderWatchesWaitReadsAnEditMadeMeanwhileOnceTheyAreSet(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeBots(t, dir, 30)
	after := make(chan struct{})
	s, err := filerecord.Open(context.Background(), filerecord.Config{ConfigDir: dir, Watch: true, WatchAfter: after})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	ctx := t.Context()
	changes, err := s.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Saved by hand while the folders' watches wait: no watch is set on
	// its folder yet, so it is read when that watch is.
	r := smallBot("bot-00015")
	r.Model = "edited-while-waiting"
	writeFile(t, botFile(dir, r.ID), string(filerecord.Encode(r)))
	close(after)
	s.WaitWatched()
	select {
	case c := <-changes:
		if c.Kind != record.Updated || c.ID != r.ID || c.Entry.Record.Model != r.Model {
			t.Fatalf("change %v %s %+v, want the edit made while the watches waited", c.Kind, c.ID, c.Entry.Record)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the edit made while the watches waited was never read")
	}
	// And the folder is watched from then on.
	r.Model = "edited-once-watched"
	writeFile(t, botFile(dir, r.ID), string(filerecord.Encode(r)))
	select {
	case c := <-changes:
		if c.Kind != record.Updated || c.Entry.Record.Model != r.Model {
			t.Fatalf("change %v %+v, want the second edit", c.Kind, c.Entry.Record)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("an edit after the watches were set was never read")
	}
}

func TestAStoreClosedWhileItsFolderWatchesWaitEndsWithNoGoroutineLeft(t *testing.T) {
	openWatched(t, t.TempDir()).s.Close()
	waitGoroutines(t, runtime.NumGoroutine())
	base := runtime.NumGoroutine()
	dir := t.TempDir()
	writeBots(t, dir, 30)
	s, err := filerecord.Open(context.Background(), filerecord.Config{ConfigDir: dir, Watch: true, WatchAfter: make(chan struct{})})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s.WaitWatched()
	s.WaitSwept()
	waitGoroutines(t, base)
}
