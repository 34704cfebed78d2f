package filerecord_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/agenthost/bots/internal/frontmatter"
	"github.com/agenthost/bots/internal/waittest"
	"github.com/agenthost/bots/record"
	"github.com/agenthost/bots/record/filerecord"
	"github.com/agenthost/bots/record/recordtest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	dirs := map[record.Store]string{}
	openIn := func(dir string) (record.Store, error) {
		s, err := filerecord.Open(context.Background(), filerecord.Config{ConfigDir: dir})
		if err != nil {
			return nil, err
		}
		dirs[s] = dir
		return s, nil
	}
	recordtest.Run(t, recordtest.Harness{
		Open:   func(t *testing.T) (record.Store, error) { return openIn(t.TempDir()) },
		Reopen: func(_ *testing.T, old record.Store) (record.Store, error) { return openIn(dirs[old]) },
	})
}

func open(t *testing.T, dir string, log *slog.Logger) *filerecord.Store {
	t.Helper()
	s, err := filerecord.Open(context.Background(), filerecord.Config{ConfigDir: dir, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func botFile(dir, id string) string { return filepath.Join(dir, "bots", id, "bot.md") }

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

func ids(t *testing.T, s record.Store) []string {
	t.Helper()
	list, err := s.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range list {
		out = append(out, e.Record.ID)
	}
	return out
}

// reported checks that exactly the given files are reported, each naming
// its reason, in the problems and in a Warn log line with the path.
func reported(t *testing.T, s *filerecord.Store, log *waittest.Log, want map[string]string) {
	t.Helper()
	problems := s.Problems()
	if len(problems) != len(want) {
		t.Fatalf("problems %+v, want %d", problems, len(want))
	}
	for _, p := range problems {
		says, ok := want[p.Path]
		if !ok {
			t.Fatalf("problem at %s not expected: %+v", p.Path, p)
		}
		if !strings.Contains(p.Reason, says) || p.Since.IsZero() {
			t.Errorf("problem %+v does not say %q", p, says)
		}
		if !strings.Contains(log.String(), "level=WARN") || !strings.Contains(log.String(), p.Path) {
			t.Errorf("no Warn line names %s:\n%s", p.Path, log)
		}
	}
}

func TestRestartGivesBackEveryBotTombstoneAndETag(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ctx := context.Background()
	s := open(t, dir, nil)
	want := map[string]record.Entry{}
	for _, id := range []string{"alpha", "beta", "gamma"} {
		e, err := s.Create(ctx, recordtest.Sample(id))
		if err != nil {
			t.Fatal(err)
		}
		want[id] = e
	}
	minimal, err := s.Create(ctx, record.Record{ID: "plain", Name: "Plain", Owner: "root:host"})
	if err != nil {
		t.Fatal(err)
	}
	want["plain"] = minimal
	r := want["beta"].Record
	r.Name = "Beta, edited"
	if want["beta"], err = s.Update(ctx, r, want["beta"].ETag); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "gamma", ""); err != nil {
		t.Fatal(err)
	}
	delete(want, "gamma")
	s.Close()

	again := open(t, dir, nil)
	list, err := again.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != len(want) {
		t.Fatalf("after restart %d bots, want %d", len(list), len(want))
	}
	for _, e := range list {
		w := want[e.Record.ID]
		if !e.Record.Equal(w.Record) || e.ETag != w.ETag {
			t.Errorf("after restart %s: %+v etag %s\nwant %+v etag %s", e.Record.ID, e.Record, e.ETag, w.Record, w.ETag)
		}
	}
	if gone, _ := again.Gone(ctx, "gamma"); !gone {
		t.Fatal("the tombstone of gamma is lost")
	}
	if _, err := again.Create(ctx, recordtest.Sample("gamma")); !errors.Is(err, record.ErrGone) {
		t.Fatalf("Create gamma after restart: %v, want ErrGone", err)
	}
	if p := again.Problems(); len(p) != 0 {
		t.Fatalf("problems: %+v", p)
	}
}

func TestETagChangesWhenFileIsEditedByHand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := open(t, dir, nil)
	e, err := s.Create(context.Background(), recordtest.Sample("motion"))
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	data, err := os.ReadFile(botFile(dir, "motion"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, botFile(dir, "motion"), strings.Replace(string(data), "color: teal", "color: red", 1))
	got, err := open(t, dir, nil).Get(context.Background(), "motion")
	if err != nil {
		t.Fatal(err)
	}
	if got.ETag == e.ETag || got.Record.Color != "red" {
		t.Fatalf("after a hand edit: etag %s (was %s), colour %s", got.ETag, e.ETag, got.Record.Color)
	}
}

func TestInvalidBotFileIsReportedAndOtherBotsLoad(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, botFile(dir, "good"), strings.Replace(specExample, "id: motion", "id: good", 1))
	writeFile(t, botFile(dir, "broken"), "---\nid: [broken\n---\n")
	writeFile(t, botFile(dir, "mauve"), "---\ncolor: mauve\n---\n")
	writeFile(t, botFile(dir, "plain"), "just text\n")
	if err := os.MkdirAll(botFile(dir, "folder"), 0o700); err != nil { // a bot.md no file can be read from
		t.Fatal(err)
	}
	writeFile(t, botFile(dir, "Upper"), "---\n---\n")
	var log waittest.Log
	s := open(t, dir, log.Logger(slog.LevelWarn))
	if got := ids(t, s); len(got) != 1 || got[0] != "good" {
		t.Fatalf("loaded %v, want only good", got)
	}
	if e, _ := s.Get(context.Background(), "good"); e.Record.Workspace != "/srv/bots/motion" {
		t.Fatalf("good loaded as %+v", e.Record)
	}
	reported(t, s, &log, map[string]string{
		botFile(dir, "broken"): "not a bot record",
		botFile(dir, "mauve"):  `color "mauve" is neither`,
		botFile(dir, "plain"):  "has no frontmatter",
		botFile(dir, "folder"): "not a regular file",
		botFile(dir, "Upper"):  "folder name is no bot id",
	})
	if p := s.Problems(); p[0].ID != "" || p[1].ID != "broken" {
		t.Fatalf("problems not ordered by id: %+v", p)
	}
}

func TestFileNamingAnotherIDIsLeftOutAndReported(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, botFile(dir, "motion"), strings.Replace(specExample, "id: motion", "id: other", 1))
	var log waittest.Log
	s := open(t, dir, log.Logger(slog.LevelWarn))
	if got := ids(t, s); len(got) != 0 {
		t.Fatalf("loaded %v", got)
	}
	reported(t, s, &log, map[string]string{botFile(dir, "motion"): `names id "other" but the file is in the folder of "motion"`})
	if _, err := s.Create(context.Background(), recordtest.Sample("motion")); !errors.Is(err, record.ErrExists) {
		t.Fatalf("Create over the reported file: %v, want ErrExists", err)
	}
}

func TestAliasBombAndOversizedFileAreRefused(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, botFile(dir, "bomb"), "---\na: &a [x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b]\nd: [*c, *c, *c, *c, *c, *c, *c, *c]\n---\n")
	writeFile(t, botFile(dir, "huge"), "---\nid: huge\n---\n"+strings.Repeat("x", frontmatter.MaxSize))
	var log waittest.Log
	s := open(t, dir, log.Logger(slog.LevelWarn))
	if got := ids(t, s); len(got) != 0 {
		t.Fatalf("loaded %v", got)
	}
	reported(t, s, &log, map[string]string{
		botFile(dir, "bomb"): "YAML anchors and aliases are not allowed",
		botFile(dir, "huge"): "larger than 1048576 bytes",
	})
}

func TestTombstonedSlugWithBotFileIsReportedAndKeptOnDisk(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, botFile(dir, "motion"), specExample)
	writeFile(t, filepath.Join(dir, "bots", "motion", "sessions", "row"), "x")
	writeFile(t, filepath.Join(dir, "bots-gone", "motion"), "")
	var log waittest.Log
	s := open(t, dir, log.Logger(slog.LevelWarn))
	if got := ids(t, s); len(got) != 0 {
		t.Fatalf("loaded %v", got)
	}
	reported(t, s, &log, map[string]string{botFile(dir, "motion"): "was deleted and is spent"})
	for _, p := range []string{botFile(dir, "motion"), filepath.Join(dir, "bots", "motion", "sessions", "row")} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("the load removed %s: %v", p, err)
		}
	}
	if _, err := s.Create(context.Background(), recordtest.Sample("motion")); !errors.Is(err, record.ErrGone) {
		t.Fatalf("Create: %v, want ErrGone", err)
	}
}

func TestTempFilesLeftByCrashAreIgnored(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile(t, botFile(dir, "motion"), specExample)
	writeFile(t, filepath.Join(dir, "bots", "motion", ".tmp-bot.md-123"), "---\nid: torn")
	writeFile(t, filepath.Join(dir, "bots", ".tmp-stray-1"), "x")
	writeFile(t, filepath.Join(dir, "bots", ".tmp-folder-2", "bot.md"), specExample)
	writeFile(t, filepath.Join(dir, "bots", "stray.txt"), "x")
	writeFile(t, filepath.Join(dir, "bots", "empty", "sessions", "row"), "x")
	writeFile(t, filepath.Join(dir, "bots-gone", ".tmp-other-3"), "")
	aside := filepath.Join(dir, "bots", ".tmp-deleted-old-1")
	writeFile(t, filepath.Join(aside, "bot.md"), specExample)
	var log waittest.Log
	s := open(t, dir, log.Logger(slog.LevelWarn))
	if got := ids(t, s); len(got) != 1 || got[0] != "motion" {
		t.Fatalf("loaded %v, want motion", got)
	}
	if p := s.Problems(); len(p) != 0 {
		t.Fatalf("problems %+v", p)
	}
	if gone, _ := s.Gone(context.Background(), "other"); gone {
		t.Fatal("a temp tombstone counts")
	}
	if _, err := os.Stat(aside); !os.IsNotExist(err) {
		t.Fatalf("the folder a crashed delete moved aside is still there: %v", err)
	}
}

func TestDeleteRemovesTheBotsWholeFolder(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := open(t, dir, nil)
	if _, err := s.Create(context.Background(), recordtest.Sample("motion")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "bots", "motion", "sessions", "row"), "x")
	writeFile(t, filepath.Join(dir, "bots", "motion", "logs", "chat.jsonl"), "{}\n")
	if err := s.Delete(context.Background(), "motion", ""); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(filepath.Join(dir, "bots"))
	if err != nil || len(entries) != 0 {
		t.Fatalf("bots/ after Delete: %v, %v", entries, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "bots-gone", "motion")); err != nil {
		t.Fatalf("no tombstone: %v", err)
	}
}

func TestCreateWritesTheFileTheStoreAnswers(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := open(t, dir, nil)
	r := recordtest.Sample("motion")
	r.CreatedAt = r.CreatedAt.Add(456789) // below a millisecond: a file keeps milliseconds
	e, err := s.Create(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	if !e.Record.Equal(recordtest.Sample("motion")) {
		t.Fatalf("Create answered %v, not the record as its file keeps it", e.Record.CreatedAt)
	}
	data, err := os.ReadFile(botFile(dir, "motion"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(data, filerecord.Encode(recordtest.Sample("motion"))) {
		t.Fatalf("bot.md:\n%s", data)
	}
}

func TestWriteOfRecordNoFileCanHoldIsRefused(t *testing.T) {
	t.Parallel()
	s := open(t, t.TempDir(), nil)
	r := recordtest.Sample("motion")
	r.Color = "mauve"
	if _, err := s.Create(context.Background(), r); err == nil || !strings.Contains(err.Error(), "mauve") {
		t.Fatalf("Create with a bad colour: %v", err)
	}
	if got := ids(t, s); len(got) != 0 {
		t.Fatalf("stored %v", got)
	}
}

func TestWritesAfterContextEndsAreRefused(t *testing.T) {
	t.Parallel()
	s := open(t, t.TempDir(), nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Create(ctx, recordtest.Sample("motion")); !errors.Is(err, context.Canceled) {
		t.Fatalf("Create: %v, want context.Canceled", err)
	}
	if _, err := filerecord.Open(ctx, filerecord.Config{ConfigDir: t.TempDir()}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Open: %v, want context.Canceled", err)
	}
}

func TestStoreIsFileBacked(t *testing.T) {
	t.Parallel()
	var s record.Store = open(t, t.TempDir(), nil)
	if fb, ok := s.(record.FileBacked); !ok || !fb.FileBacked() {
		t.Fatal("not file-backed")
	}
	if _, ok := s.(record.ProblemReporter); !ok {
		t.Fatal("not a problem reporter")
	}
}

// TestHeapPerLoadedBotIsAtMost1KiB measures 2,000 bots, to stay fast under
// the race detector; BenchmarkLoad/bots=N/heap reports it up to 100,000.
func TestHeapPerLoadedBotIsAtMost1KiB(t *testing.T) {
	const n = 2000
	dir := t.TempDir()
	writeBots(t, dir, n)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	s := open(t, dir, nil)
	s.WaitSwept()
	runtime.GC()
	runtime.ReadMemStats(&after)
	perBot := (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / n
	t.Logf("heap per loaded bot: %d bytes", perBot)
	if perBot > 1024 {
		t.Fatalf("heap per loaded bot %d bytes, want at most 1024", perBot)
	}
	if got := len(ids(t, s)); got != n {
		t.Fatalf("loaded %d bots", got)
	}
}
