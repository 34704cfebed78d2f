package record_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agenthost/bots/record"
)

func localBot(id, dir string) record.Record {
	return record.Record{ID: id, Workspace: dir}
}

func wantTaken(t *testing.T, f record.Folders, id, dir, wantOther, wantDir string) {
	t.Helper()
	other, otherDir, ok := f.TakenBy(id, dir)
	if wantOther == "" {
		if ok {
			t.Fatalf("TakenBy(%s, %s) = %s in %s, want free", id, dir, other, otherDir)
		}
		return
	}
	if !ok || other != wantOther || otherDir != wantDir {
		t.Fatalf("TakenBy(%s, %s) = %q, %q, %v; want %s in %s", id, dir, other, otherDir, ok, wantOther, wantDir)
	}
}

func TestAFolderIndexFindsTheFolderOneInsideItAndOneHoldingIt(t *testing.T) {
	t.Parallel()
	var x record.FolderIndex
	x.Add("motion", "/r/team/motion")
	wantTaken(t, &x, "other", "/r/team/motion", "motion", "/r/team/motion")
	wantTaken(t, &x, "other", "/r/team/motion/inner", "motion", "/r/team/motion")
	wantTaken(t, &x, "other", "/r/team", "motion", "/r/team/motion")
	wantTaken(t, &x, "other", "/r", "motion", "/r/team/motion")
	wantTaken(t, &x, "other", "/", "motion", "/r/team/motion")
	wantTaken(t, &x, "other", "/r/team/motion-2", "", "")
	wantTaken(t, &x, "other", "/r/team/mot", "", "")
	wantTaken(t, &x, "other", "/r/other", "", "")
	// A bot's own folder is never taken from it.
	wantTaken(t, &x, "motion", "/r/team/motion", "", "")
}

func TestAFolderIndexNamesTheFirstBotBySlug(t *testing.T) {
	t.Parallel()
	var x record.FolderIndex
	for _, id := range []string{"d", "b", "c"} {
		x.Add(id, "/r/x/"+id)
	}
	x.Add("e", "/r")
	wantTaken(t, &x, "new", "/r/x", "b", "/r/x/b")
	wantTaken(t, &x, "e", "/r/x", "b", "/r/x/b")
	x.Add("a", "/r/x/b/deep")
	wantTaken(t, &x, "new", "/r/x", "a", "/r/x/b/deep")
}

func TestAFolderIndexForgetsWhatIsRemovedAndKeepsEachClaim(t *testing.T) {
	t.Parallel()
	var x record.FolderIndex
	x.Add("a", "/r/a")
	x.Add("a", "/r/a") // claimed twice: from the feed and from a write
	x.Remove("a", "/r/a")
	wantTaken(t, &x, "new", "/r/a", "a", "/r/a")
	x.Remove("a", "/r/a")
	x.Remove("a", "/r/a") // no claim left: nothing to do
	x.Remove("b", "/r/b/c")
	wantTaken(t, &x, "new", "/r/a", "", "")
	if x.Len() != 0 {
		t.Fatalf("%d claims left", x.Len())
	}
}

// within is the check the index replaces: filepath.Rel.
func within(path, dir string) bool {
	if path == dir {
		return true
	}
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !filepath.IsAbs(rel) && !strings.HasPrefix(rel, "../")
}

// listedTakenBy is the listing the index replaces: every other bot in turn.
func listedTakenBy(id, dir string, others []record.Record) (record.Record, bool) {
	for _, other := range others {
		if other.ID == id || other.Workspace == "" || other.Computer != "" {
			continue
		}
		ws := filepath.Clean(other.Workspace)
		if within(dir, ws) || within(ws, dir) {
			other.Workspace = ws
			return other, true
		}
	}
	return record.Record{}, false
}

func TestAFolderIndexAndAFolderListAgreeWithTheListingTheyReplace(t *testing.T) {
	t.Parallel()
	bots := []record.Record{
		localBot("a", "/r/a"), localBot("b", "/r/x/b"), localBot("c", "/r/x/c/d"),
		localBot("d", "/r/x/c"), localBot("e", "/r/y/"), localBot("f", "relative/f"),
		localBot("g", "/r/x/c/d/../e"), localBot("h", "/r/ab"),
		{ID: "i", Workspace: "/r/z", Computer: "box"}, {ID: "j"},
	}
	var x record.FolderIndex
	for _, r := range bots {
		if dir, ok := record.LocalFolder(r); ok {
			x.Add(r.ID, dir)
		}
	}
	for _, dir := range []string{"/", "/r", "/r/a", "/r/a/b", "/r/x", "/r/x/b", "/r/x/c", "/r/x/c/d/e", "/r/y", "/r/y/z", "/r/z", "/r/q", "/r/ab", "/r/abc", "/q"} {
		for _, id := range []string{"a", "d", "h", "new"} {
			want, wantOK := listedTakenBy(id, dir, bots) // bots are in slug order: the first is the first by slug
			for name, f := range map[string]record.Folders{"index": &x, "list": record.FolderList(bots)} {
				other, otherDir, ok := f.TakenBy(id, dir)
				if ok != wantOK || other != want.ID || (ok && otherDir != want.Workspace) {
					t.Errorf("%s: TakenBy(%s, %s) = %q in %q (%v); the listing says %q in %q (%v)", name, id, dir, other, otherDir, ok, want.ID, want.Workspace, wantOK)
				}
			}
		}
	}
}

func BenchmarkFolderIndexTakenBy(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000} {
		b.Run(fmt.Sprintf("bots=%d", n), func(b *testing.B) {
			var x record.FolderIndex
			for i := range n {
				id := fmt.Sprintf("bot-%06d", i)
				x.Add(id, "/srv/bots/"+id)
			}
			for b.Loop() {
				if _, _, ok := x.TakenBy("new", "/srv/bots/new"); ok {
					b.Fatal("taken")
				}
			}
		})
	}
}
