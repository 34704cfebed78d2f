package relay

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/agenthost/bots/internal/atomicfile"
)

// seenLimit is how many message ids a connection's memo keeps: enough to
// recognise what a network delivers again after a reconnect or a restart.
const seenLimit = 1000

// memo is what a connection remembers across restarts: the chat each key
// talks in, and the ids of the messages it passed on, oldest first.
type memo struct {
	Chats map[string]string `json:"chats"`
	Seen  []string          `json:"seen"`

	seen map[string]bool
}

// memoPath is the file of a connection's memo in the folder dir.
func memoPath(dir, conn string) string { return filepath.Join(dir, conn+".json") }

// loadMemo reads a connection's memo; an empty one when dir is "" or the
// file does not exist. A file it cannot read or decode gives an empty memo
// and an error naming the file, and is left for a person to look at until
// the next save replaces it.
func loadMemo(dir, conn string) (*memo, error) {
	m := &memo{Chats: map[string]string{}, seen: map[string]bool{}}
	if dir == "" {
		return m, nil
	}
	data, err := os.ReadFile(memoPath(dir, conn))
	if errors.Is(err, fs.ErrNotExist) {
		return m, nil
	}
	if err == nil {
		err = json.Unmarshal(data, m)
	}
	if err != nil {
		m = &memo{Chats: map[string]string{}, seen: map[string]bool{}}
		return m, fmt.Errorf("cannot read %s: %w", memoPath(dir, conn), err)
	}
	if m.Chats == nil {
		m.Chats = map[string]string{}
	}
	m.seen = map[string]bool{}
	for _, id := range m.Seen {
		m.seen[id] = true
	}
	return m, nil
}

// see records id and reports whether it is new.
func (m *memo) see(id string) bool {
	if m.seen[id] {
		return false
	}
	m.seen[id] = true
	m.Seen = append(m.Seen, id)
	if len(m.Seen) > seenLimit {
		delete(m.seen, m.Seen[0])
		m.Seen = m.Seen[1:]
	}
	return true
}

// save writes the memo crash-safely into dir (none when dir is "").
func (m *memo) save(dir, conn string) error {
	if dir == "" {
		return nil
	}
	data, err := json.Marshal(m)
	if err != nil {
		return err
	}
	if err := atomicfile.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return atomicfile.Write(memoPath(dir, conn), data, 0o600)
}
