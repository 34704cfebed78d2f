package record

import (
	"path/filepath"
	"strings"
)

// Folders answers which bot works in a folder on this host among a set of
// records: the others a Guard checks a record against.
type Folders interface {
	// TakenBy returns a bot other than id whose folder on this host (its
	// Workspace, cleaned, with no Computer) is dir, holds dir or lies
	// inside it, and that folder; of several, the first by slug. dir is
	// clean and absolute.
	TakenBy(id, dir string) (other, otherDir string, ok bool)
}

// LocalFolder is the folder on this host r claims: its workspace, cleaned,
// when it is absolute and r names no computer.
func LocalFolder(r Record) (string, bool) {
	if r.Computer != "" || r.Workspace == "" {
		return "", false
	}
	dir := filepath.Clean(r.Workspace)
	if !filepath.IsAbs(dir) {
		return "", false
	}
	return dir, true
}

// Within reports whether path is dir or lies inside it; both are clean and
// absolute.
func Within(path, dir string) bool {
	if !strings.HasPrefix(path, dir) {
		return false
	}
	return len(path) == len(dir) || path[len(dir)] == filepath.Separator || strings.HasSuffix(dir, string(filepath.Separator))
}

// FolderList is Folders over a list of records, each looked at in turn:
// for a few records, or one question.
type FolderList []Record

// TakenBy implements Folders.
func (l FolderList) TakenBy(id, dir string) (other, otherDir string, ok bool) {
	for _, r := range l {
		ws, local := LocalFolder(r)
		if r.ID == id || !local || (ok && r.ID >= other) {
			continue
		}
		if Within(dir, ws) || Within(ws, dir) {
			other, otherDir, ok = r.ID, ws, true
		}
	}
	return other, otherDir, ok
}

// FolderIndex is Folders over claims added and removed one by one, in
// time that grows with the depth of a folder, not with the number of
// claims: a trie of the folders' path elements. The zero value is empty
// and ready. It is not safe for concurrent use.
type FolderIndex struct {
	root folderNode
}

type folderNode struct {
	children map[string]*folderNode
	ids      []string // the bots that claim this very folder, a bot once per claim
	below    int      // the claims in folders strictly below this one
}

// Add records that bot id claims dir, a clean absolute folder. A bot may
// hold several claims; each Remove takes one away.
func (x *FolderIndex) Add(id, dir string) {
	n := &x.root
	for _, part := range splitFolder(dir) {
		n.below++
		next := n.children[part]
		if next == nil {
			if n.children == nil {
				n.children = make(map[string]*folderNode)
			}
			next = &folderNode{}
			n.children[part] = next
		}
		n = next
	}
	n.ids = append(n.ids, id)
}

// Remove takes away one claim of dir by id, if there is one.
func (x *FolderIndex) Remove(id, dir string) {
	parts := splitFolder(dir)
	path := make([]*folderNode, 0, len(parts)+1)
	n := &x.root
	path = append(path, n)
	for _, part := range parts {
		if n = n.children[part]; n == nil {
			return // never claimed
		}
		path = append(path, n)
	}
	i := -1
	for j, c := range n.ids {
		if c == id {
			i = j
			break
		}
	}
	if i < 0 {
		return
	}
	n.ids = append(n.ids[:i], n.ids[i+1:]...)
	if len(n.ids) == 0 {
		n.ids = nil
	}
	for k := len(parts) - 1; k >= 0; k-- {
		parent, child := path[k], path[k+1]
		parent.below--
		if child.below == 0 && len(child.ids) == 0 {
			delete(parent.children, parts[k])
		}
	}
}

// Len returns the number of claims.
func (x *FolderIndex) Len() int { return x.root.below + len(x.root.ids) }

// TakenBy implements Folders.
func (x *FolderIndex) TakenBy(id, dir string) (other, otherDir string, ok bool) {
	consider := func(ids []string, where string) {
		for _, c := range ids {
			if c != id && (!ok || c < other) {
				other, otherDir, ok = c, where, true
			}
		}
	}
	n := &x.root
	vol := filepath.VolumeName(dir)
	path := vol
	consider(n.ids, vol+string(filepath.Separator))
	for _, part := range splitFolder(dir) {
		if n = n.children[part]; n == nil {
			return other, otherDir, ok
		}
		path += string(filepath.Separator) + part
		consider(n.ids, path) // dir lies inside (or is) this bot's folder
	}
	if n.below > 0 {
		n.walkBelow(path, consider)
	}
	return other, otherDir, ok
}

// walkBelow calls fn with the claims of every folder strictly below n,
// whose path is path.
func (n *folderNode) walkBelow(path string, fn func(ids []string, where string)) {
	for part, child := range n.children {
		where := path + string(filepath.Separator) + part
		if len(child.ids) > 0 {
			fn(child.ids, where)
		}
		if child.below > 0 {
			child.walkBelow(where, fn)
		}
	}
}

// splitFolder returns the elements of a clean absolute path, its volume
// left out; the root has none.
func splitFolder(dir string) []string {
	dir = strings.Trim(dir[len(filepath.VolumeName(dir)):], string(filepath.Separator))
	if dir == "" {
		return nil
	}
	return strings.Split(dir, string(filepath.Separator))
}
