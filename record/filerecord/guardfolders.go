package filerecord

import (
	"path/filepath"
	"runtime"
	"strings"

	"github.com/agenthost/bots/record"
)

// folderTrie holds records by the path elements of their folder
// (Workspace), so that the records whose folder is a given one, lies
// inside it or holds it - the only ones a record.Guard compares a record
// with - are found by walking the folder's path, not every record: the
// check of n bots at SetGuard costs n walks, not n² comparisons.
type folderTrie struct {
	root trieNode
}

type trieNode struct {
	kids map[string]*trieNode
	recs []*record.Record // the records whose folder is this one
}

// elems splits a folder into the elements the trie is keyed by: cleaned,
// and on Windows, whose paths compare without case, folded.
func elems(dir string) []string {
	dir = filepath.Clean(dir)
	if runtime.GOOS == "windows" {
		dir = strings.ToLower(dir)
	}
	parts := strings.Split(filepath.ToSlash(dir), "/")
	out := parts[:0]
	for i, p := range parts {
		if p != "" || i == 0 { // "" first is the root; "/" cleaned ends in one more
			out = append(out, p)
		}
	}
	return out
}

// addAt keeps r, which the trie holds by pointer (r must not change
// while the trie is in use), under the folder split into parts by elems.
func (t *folderTrie) addAt(parts []string, r *record.Record) {
	n := &t.root
	for _, e := range parts {
		if n.kids == nil {
			n.kids = make(map[string]*trieNode)
		}
		next := n.kids[e]
		if next == nil {
			next = &trieNode{}
			n.kids[e] = next
		}
		n = next
	}
	n.recs = append(n.recs, r)
}

// nearAt is near for a folder split into parts by elems.
func (t *folderTrie) nearAt(parts []string) []record.Record {
	var out []record.Record
	n := &t.root
	for _, e := range parts {
		for _, r := range n.recs {
			out = append(out, *r)
		}
		n = n.kids[e]
		if n == nil {
			return out
		}
	}
	var below func(n *trieNode)
	below = func(n *trieNode) {
		for _, r := range n.recs {
			out = append(out, *r)
		}
		for _, k := range n.kids {
			below(k)
		}
	}
	below(n)
	return out
}

// folderNear reports whether the cleaned folders a and b are one, or one
// holds the other: the test near answers with a trie, for one pair.
// Where paths compare without case (Windows) it answers true, leaving the
// comparison to the guard.
func folderNear(a, b string) bool {
	if runtime.GOOS == "windows" {
		return true
	}
	if len(a) > len(b) {
		a, b = b, a
	}
	if a == "" || !strings.HasPrefix(b, a) {
		return false
	}
	return len(a) == len(b) || a[len(a)-1] == filepath.Separator || b[len(a)] == filepath.Separator
}
