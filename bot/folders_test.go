package bot_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/bots/bot"
	"github.com/agenthost/bots/bot/errcode"
	"github.com/agenthost/bots/record"
	"github.com/agenthost/bots/record/filerecord"
)

// fileEnv is a service over a file store, as the reference server runs it.
type fileEnv struct {
	svc             *bot.Service
	store           *filerecord.Store
	configDir, root string
	log             *syncBuffer
}

func newFileEnv(t *testing.T) *fileEnv {
	t.Helper()
	base := t.TempDir()
	e := &fileEnv{configDir: filepath.Join(base, "config"), root: filepath.Join(base, "bots"), log: &syncBuffer{}}
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
	e.svc, e.store = l.start(t, false)
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
	e := newFileEnv(t)
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
