package filerecord

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/agenthost/bots/record"
)

func TestFolderTrieFindsTheFoldersThatHoldOrLieInsideAndNoOther(t *testing.T) {
	t.Parallel()
	var tr folderTrie
	for id, ws := range map[string]string{
		"root": "/srv", "mine": "/srv/bots/motion", "inner": "/srv/bots/motion/sub/deep",
		"sibling": "/srv/bots/motion-2", "other": "/srv/bots/other", "elsewhere": "/home/x", "none": "",
	} {
		tr.add(record.Record{ID: id, Workspace: ws})
	}
	ids := func(rs []record.Record) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.ID)
		}
		slices.Sort(out)
		return out
	}
	for _, tc := range []struct {
		dir  string
		want []string
	}{
		{"/srv/bots/motion", []string{"inner", "mine", "root"}},
		{"/srv/bots/motion/", []string{"inner", "mine", "root"}},
		{"/srv/bots/./motion/sub", []string{"inner", "mine", "root"}},
		{"/srv/bots", []string{"inner", "mine", "other", "root", "sibling"}},
		{"/srv/bots/new", []string{"root"}},
		{"/opt/new", nil},
		{"", nil},
	} {
		if got := ids(tr.near(tc.dir)); !slices.Equal(got, tc.want) {
			t.Errorf("near(%q) = %v, want %v", tc.dir, got, tc.want)
		}
	}
}

// TestFolderTrieAgreesWithAScanOfEveryFolder holds near, and folderNear, to what a scan of
// every record with filepath.Rel finds, over folders of several depths.
func TestFolderTrieAgreesWithAScanOfEveryFolder(t *testing.T) {
	t.Parallel()
	dirs := []string{"/a", "/a/b", "/a/b/c", "/a/bc", "/a/b/c/d", "/b", "/b/a", "/ab", "/a/b/../x", "/"}
	var tr folderTrie
	var all []record.Record
	for i, d := range dirs {
		r := record.Record{ID: string(rune('a' + i)), Workspace: d}
		tr.add(r)
		all = append(all, r)
	}
	within := func(path, dir string) bool {
		rel, err := filepath.Rel(dir, path)
		return err == nil && rel != ".." && !filepath.IsAbs(rel) && (len(rel) < 3 || rel[:3] != "../")
	}
	for _, d := range append(dirs, "/a/b/c/d/e", "/c", "/a/x") {
		var want []string
		for _, r := range all {
			ws := filepath.Clean(r.Workspace)
			if within(d, ws) || within(ws, d) {
				want = append(want, r.ID)
			}
		}
		var got, pairs []string
		for _, r := range tr.near(d) {
			got = append(got, r.ID)
		}
		for _, r := range all {
			if folderNear(filepath.Clean(d), filepath.Clean(r.Workspace)) {
				pairs = append(pairs, r.ID)
			}
		}
		slices.Sort(want)
		slices.Sort(got)
		slices.Sort(pairs)
		if !slices.Equal(got, want) {
			t.Errorf("near(%q) = %v, a scan finds %v", d, got, want)
		}
		if !slices.Equal(pairs, want) {
			t.Errorf("folderNear with %q holds %v, a scan finds %v", d, pairs, want)
		}
	}
}

// add keeps r under its folder; a record without one is not kept.
func (t *folderTrie) add(r record.Record) {
	if r.Workspace == "" {
		return
	}
	t.addAt(elems(r.Workspace), &r)
}

// near returns the records whose folder is dir, holds it or lies inside
// it.
func (t *folderTrie) near(dir string) []record.Record {
	if dir == "" {
		return nil
	}
	return t.nearAt(elems(dir))
}
