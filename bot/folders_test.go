package bot_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/bots/bot"
	"github.com/agenthost/bots/errcode"
	"github.com/agenthost/bots/internal/waittest"
	"github.com/agenthost/bots/record"
	"github.com/agenthost/bots/record/filerecord"
)

// fileEnv is a service over a file store, as the reference server runs it.
type fileEnv struct {
	watch           bool // the store follows hand edits
	svc             *bot.Service
	store           *filerecord.Store
	configDir, root string
	log             *waittest.Log
}

func newFileEnv(t *testing.T, watch bool) *fileEnv {
	t.Helper()
	base := t.TempDir()
	e := &fileEnv{watch: watch, configDir: filepath.Join(base, "config"), root: filepath.Join(base, "bots"), log: &waittest.Log{}}
	e.start(t)
	return e
}

// start opens the store and the service (again) over the same folders.
func (e *fileEnv) start(t *testing.T) {
	t.Helper()
	if e.svc != nil {
		e.svc.Close()
		e.store.Close()
	}
	l := &legacyEnv{configDir: e.configDir, root: e.root, log: e.log}
	e.svc, e.store = l.start(t, e.watch)
}

// problemAt returns the reason of the problem standing at path, "" when
// there is none.
func problemAt(ps []record.Problem, path string) string {
	for _, p := range ps {
		if p.Path == path {
			return p.Reason
		}
	}
	return ""
}

func TestAFolderSwappedForALinkIsRefusedAndReportedUntilPutBack(t *testing.T) {
	t.Parallel()
	e := newFileEnv(t, false)
	if _, err := e.svc.Make(ctx(t), soft, "motion", []byte(`{"name":"Motion"}`)); err != nil {
		t.Fatal(err)
	}
	folder := filepath.Join(e.root, "motion")
	outside := t.TempDir()
	writeFile(t, filepath.Join(outside, "AGENTS.md"), "---\nname: Elsewhere\n---\n")
	if err := os.RemoveAll(folder); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, folder); err != nil {
		t.Fatal(err)
	}
	_, err := e.svc.Read(ctx(t), soft, "motion")
	wantCode(t, err, errcode.PermissionDenied, folder, "bot://motion")
	if r := problemAt(e.store.Problems(), folder); !strings.Contains(r, "out of root") {
		t.Fatalf("problems %+v, want one at %s", e.store.Problems(), folder)
	}
	if !strings.Contains(e.log.String(), folder) {
		t.Fatalf("no Warn line names %s:\n%s", folder, e.log)
	}

	// A link to another folder under root is refused too: it would be
	// another bot's.
	inside := filepath.Join(e.root, "other")
	if err := os.MkdirAll(inside, 0o755); err != nil {
		t.Fatal(err)
	}
	os.Remove(folder)
	if err := os.Symlink(inside, folder); err != nil {
		t.Fatal(err)
	}
	_, err = e.svc.Read(ctx(t), soft, "motion")
	wantCode(t, err, errcode.PermissionDenied, folder)

	os.Remove(folder)
	if err := os.Mkdir(folder, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Read(ctx(t), soft, "motion"); err != nil {
		t.Fatalf("read once the folder is back: %v", err)
	}
	if r := problemAt(e.store.Problems(), folder); r != "" {
		t.Fatalf("the problem stands once the folder is back: %s", r)
	}
}

// botFile is the bot.md of bot id.
func (e *fileEnv) botFile(id string) string { return filepath.Join(e.configDir, "bots", id, "bot.md") }

// waitProblem polls the store's problems until one stands at path, and
// returns its reason.
func (e *fileEnv) waitProblem(t *testing.T, path string) string {
	t.Helper()
	var r string
	if !waittest.Within(10*time.Second, func() bool { r = problemAt(e.store.Problems(), path); return r != "" }) {
		t.Fatalf("no problem at %s: %+v", path, e.store.Problems())
	}
	return r
}

func TestAHandEditCannotBringABotIntoAnothersFolder(t *testing.T) {
	t.Parallel()
	e := newFileEnv(t, true)
	alice := filepath.Join(e.root, "alice-bot")
	if _, err := e.svc.Make(ctx(t), soft, "alice-bot", []byte(`{"name":"Alice","instructions":"Keep the ledger."}`)); err != nil {
		t.Fatal(err)
	}
	before := readFile(t, filepath.Join(alice, "AGENTS.md"))
	if _, err := e.svc.Make(ctx(t), soft, "flip", []byte(`{"name":"Flip","computer":"box1","workspace":"`+alice+`"}`)); err != nil {
		t.Fatal(err)
	}
	file := readFile(t, e.botFile("flip"))
	local := strings.Replace(file, "computer: box1\n", "", 1)
	if local == file {
		t.Fatalf("flip's bot.md names no computer:\n%s", file)
	}
	writeFile(t, e.botFile("flip"), local)

	// While the store is open, the edit is refused and the bot keeps its
	// last good record.
	if r := e.waitProblem(t, e.botFile("flip")); !strings.Contains(r, alice) || !strings.Contains(r, "taken") {
		t.Fatalf("problem %q names neither the folder nor that it is taken", r)
	}
	if b, err := e.svc.Read(ctx(t), soft, "flip"); err != nil || b.Record.Computer != "box1" {
		t.Fatalf("flip reads %+v, %v; want its last good record, on box1", b.Record, err)
	}

	// At the next start the file is read as it is: the bot is left out.
	e.start(t)
	if _, err := e.svc.Read(ctx(t), soft, "flip"); errcode.Of(err) != errcode.NotFound {
		t.Fatalf("flip after a restart: %v, want it left out", err)
	}
	if r := problemAt(e.store.Problems(), e.botFile("flip")); !strings.Contains(r, alice) || !strings.Contains(r, "left out") {
		t.Fatalf("problems after a restart %+v", e.store.Problems())
	}
	if got := readFile(t, filepath.Join(alice, "AGENTS.md")); got != before {
		t.Fatalf("Alice's AGENTS.md was rewritten:\n%s", got)
	}
	if b, err := e.svc.Read(ctx(t), soft, "alice-bot"); err != nil || b.Record.Name != "Alice" || b.Record.Instructions != "Keep the ledger." {
		t.Fatalf("alice-bot reads %+v, %v", b.Record, err)
	}
}

func TestABotFileNamingAFolderOutsideRootIsLeftOutAtLoad(t *testing.T) {
	t.Parallel()
	e := newFileEnv(t, false)
	outside := t.TempDir()
	writeFile(t, filepath.Join(outside, "AGENTS.md"), "---\nname: Outside\n---\n")
	writeFile(t, e.botFile("away"), "---\nid: away\nbody: robot\ncolor: teal\nworkspace: "+outside+
		"\nowner: user:soft\ncreatedAt: 2026-01-02T03:04:05.000Z\nupdatedAt: 2026-01-02T03:04:05.000Z\n---\n")
	writeFile(t, e.botFile("nowhere"), "---\nid: nowhere\nname: Nowhere\nowner: user:soft\n"+
		"createdAt: 2026-01-02T03:04:05.000Z\nupdatedAt: 2026-01-02T03:04:05.000Z\n---\n")
	e.start(t)
	for id, want := range map[string]string{"away": outside, "nowhere": "no workspace"} {
		if _, err := e.svc.Read(ctx(t), soft, id); errcode.Of(err) != errcode.NotFound {
			t.Errorf("%s: %v, want it left out", id, err)
		}
		if r := problemAt(e.store.Problems(), e.botFile(id)); !strings.Contains(r, want) {
			t.Errorf("%s: problems %+v, want one naming %q", id, e.store.Problems(), want)
		}
	}
	if !strings.Contains(e.log.String(), e.botFile("away")) {
		t.Errorf("no Warn line names %s:\n%s", e.botFile("away"), e.log)
	}
}

func TestABotWhoseFolderUnderRootIsALinkIsLeftOutAtLoadAndTheOthersKept(t *testing.T) {
	t.Parallel()
	e := newFileEnv(t, false)
	if _, err := e.svc.Make(ctx(t), soft, "motion", []byte(`{"name":"Motion"}`)); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(t.TempDir(), filepath.Join(e.root, "linked")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, e.botFile("linked"), "---\nid: linked\nbody: robot\ncolor: teal\nworkspace: "+filepath.Join(e.root, "linked")+
		"\nowner: user:soft\ncreatedAt: 2026-01-02T03:04:05.000Z\nupdatedAt: 2026-01-02T03:04:05.000Z\n---\n")
	e.start(t)
	if _, err := e.svc.Read(ctx(t), soft, "linked"); errcode.Of(err) != errcode.NotFound {
		t.Errorf("linked: %v, want it left out", err)
	}
	if r := problemAt(e.store.Problems(), e.botFile("linked")); !strings.Contains(r, "symbolic link") {
		t.Errorf("problems %+v, want one naming the link", e.store.Problems())
	}
	if _, err := e.svc.Read(ctx(t), soft, "motion"); err != nil {
		t.Errorf("motion: %v, want it kept", err)
	}
}

func TestAStartRemovesThePersonaTempFilesACrashLeftInTheBackgroundAndKeepsTheBots(t *testing.T) {
	t.Parallel()
	e := newFileEnv(t, false)
	if _, err := e.svc.Make(ctx(t), soft, "motion", []byte(`{"name":"Motion"}`)); err != nil {
		t.Fatal(err)
	}
	folder := filepath.Join(e.root, "motion")
	old := time.Now().Add(-time.Hour)
	plant := func(name string) string {
		path := filepath.Join(folder, name)
		writeFile(t, path, "half a write")
		if err := os.Chtimes(path, old, old); err != nil {
			t.Fatal(err)
		}
		return path
	}
	stale := []string{plant(".tmp-AGENTS.md-123"), plant(".tmp-CLAUDE.md-456")}
	own := plant(".tmp-notes-789") // the bot's own
	e.start(t)
	// The sweep runs in the background once the service is made.
	for _, p := range stale {
		if !waittest.Within(10*time.Second, func() bool { return !exists(p) }) {
			t.Errorf("%s survived the restart", p)
		}
	}
	if !exists(own) {
		t.Errorf("the bot's own temp file %s was removed", own)
	}
	if b, err := e.svc.Read(ctx(t), soft, "motion"); err != nil || b.Record.Name != "Motion" {
		t.Fatalf("read after the restart: %+v, %v", b.Record, err)
	}
}

func TestABotFileOfTheOlderLayoutNamingATakenFolderIsLeftOutWhenMoved(t *testing.T) {
	t.Parallel()
	e := newFileEnv(t, false)
	if _, err := e.svc.Make(ctx(t), soft, "alice-bot", []byte(`{"name":"Alice"}`)); err != nil {
		t.Fatal(err)
	}
	alice := filepath.Join(e.root, "alice-bot")
	writeFile(t, filepath.Join(e.configDir, "bots", "flip.md"), "---\nid: flip\nname: Flip\nworkspace: "+alice+
		"\nowner: user:soft\ncreatedAt: 2027-01-02T03:04:05.000Z\nupdatedAt: 2027-01-02T03:04:05.000Z\n---\n")
	e.start(t)
	if _, err := e.svc.Read(ctx(t), soft, "flip"); errcode.Of(err) != errcode.NotFound {
		t.Fatalf("flip: %v, want it left out", err)
	}
	if r := problemAt(e.store.Problems(), e.botFile("flip")); !strings.Contains(r, "taken") {
		t.Fatalf("problems %+v", e.store.Problems())
	}
	if b, err := e.svc.Read(ctx(t), soft, "alice-bot"); err != nil || b.Record.Name != "Alice" {
		t.Fatalf("alice-bot: %+v, %v", b.Record, err)
	}
}

func TestAHandMadeBotClaimsItsFolderAndItsRemovalFreesIt(t *testing.T) {
	t.Parallel()
	e := newFileEnv(t, true)
	dir := filepath.Join(e.root, "by-hand")
	if _, err := e.svc.Make(ctx(t), soft, "flip", []byte(`{"name":"Flip","computer":"box1","workspace":"`+dir+`"}`)); err != nil {
		t.Fatal(err)
	}
	file := readFile(t, e.botFile("flip"))
	writeFile(t, e.botFile("flip"), strings.Replace(file, "computer: box1\n", "", 1))
	waittest.For(t, "the hand edit taken in", func() bool {
		en, err := e.store.Get(ctx(t), "flip")
		return err == nil && en.Record.Computer == ""
	})
	// The index hears of it a moment after the store took it in: a make
	// into the folder is refused from then on.
	n := 0
	waittest.For(t, "a make into the claimed folder refused", func() bool {
		n++
		slug := fmt.Sprintf("late-%d", n)
		_, err := e.svc.Make(ctx(t), soft, slug, []byte(`{"name":"L","workspace":"`+dir+`"}`))
		if err == nil { // made before the index heard: give the folder back
			if err := e.svc.Delete(ctx(t), soft, slug, ""); err != nil {
				t.Fatal(err)
			}
		}
		return errcode.Of(err) == errcode.Invalid && strings.Contains(err.Error(), "flip")
	})
	if err := os.RemoveAll(filepath.Dir(e.botFile("flip"))); err != nil {
		t.Fatal(err)
	}
	waittest.For(t, "the folder freed", func() bool {
		n++
		_, err := e.svc.Make(ctx(t), soft, fmt.Sprintf("late-%d", n), []byte(`{"name":"L","workspace":"`+filepath.Join(dir, "inner")+`"}`))
		return err == nil
	})
}
