package bot_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/agenthost/bots/errcode"
	"github.com/agenthost/bots/internal/waittest"
)

// readable makes bot://motion and reads it twice, so that a check of its
// folder may answer from what it found before.
func readable(t *testing.T) *fileEnv {
	t.Helper()
	e := newFileEnv(t, false)
	if _, err := e.svc.Make(ctx(t), soft, "motion", []byte(`{"name":"Motion"}`)); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := e.svc.Read(ctx(t), soft, "motion"); err != nil {
			t.Fatal(err)
		}
	}
	return e
}

// elsewhere is a folder outside root holding a persona.
func elsewhere(t *testing.T) string {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "AGENTS.md"), "---\nname: Elsewhere\n---\n")
	return dir
}

func rename(t *testing.T, from, to string) {
	t.Helper()
	if err := os.Rename(from, to); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

func TestAFolderMovedAsideForALinkAfterAReadIsRefusedAtTheNextRead(t *testing.T) {
	t.Parallel()
	e := readable(t)
	folder := filepath.Join(e.root, "motion")
	rename(t, folder, folder+".old")
	symlink(t, elsewhere(t), folder)
	_, err := e.svc.Read(ctx(t), soft, "motion")
	wantCode(t, err, errcode.PermissionDenied, folder)

	os.Remove(folder)
	rename(t, folder+".old", folder)
	if _, err := e.svc.Read(ctx(t), soft, "motion"); err != nil {
		t.Fatalf("read once the folder is back: %v", err)
	}
}

func TestARootMovedAsideForOneHoldingALinkIsRefusedAtTheNextRead(t *testing.T) {
	t.Parallel()
	e := readable(t)
	rename(t, e.root, e.root+".old")
	if err := os.Mkdir(e.root, 0o755); err != nil {
		t.Fatal(err)
	}
	symlink(t, filepath.Join(e.root+".old", "motion"), filepath.Join(e.root, "motion"))
	_, err := e.svc.Read(ctx(t), soft, "motion")
	wantCode(t, err, errcode.PermissionDenied, filepath.Join(e.root, "motion"))
}

func TestAFolderAboveRootMovedAsideForOneHoldingALinkIsRefusedAtTheNextRead(t *testing.T) {
	t.Parallel()
	e := readable(t)
	above := filepath.Dir(e.root)
	moved := above + ".old"
	rename(t, above, moved)
	if err := os.MkdirAll(e.root, 0o755); err != nil {
		t.Fatal(err)
	}
	symlink(t, filepath.Join(moved, "bots", "motion"), filepath.Join(e.root, "motion"))
	_, err := e.svc.Read(ctx(t), soft, "motion")
	wantCode(t, err, errcode.PermissionDenied, filepath.Join(e.root, "motion"))
}

func TestARootReachedThroughALinkThatIsRepointedIsFollowedAtTheNextRead(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	real1, real2 := filepath.Join(base, "one"), filepath.Join(base, "two")
	for _, d := range []string{real1, real2} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	e := &fileEnv{configDir: filepath.Join(base, "config"), root: filepath.Join(base, "bots"), log: &waittest.Log{}}
	symlink(t, real1, e.root)
	e.start(t)
	if _, err := e.svc.Make(ctx(t), soft, "motion", []byte(`{"name":"Motion"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.Read(ctx(t), soft, "motion"); err != nil {
		t.Fatal(err)
	}
	// root now leads to a folder where motion is a link.
	symlink(t, elsewhere(t), filepath.Join(real2, "motion"))
	symlink(t, real2, e.root+".new")
	rename(t, e.root+".new", e.root)
	_, err := e.svc.Read(ctx(t), soft, "motion")
	wantCode(t, err, errcode.PermissionDenied, filepath.Join(e.root, "motion"))
}
