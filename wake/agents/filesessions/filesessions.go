// Package filesessions keeps agents' session records
// (agents.SessionStore) as files in a folder, one per back session.
package filesessions

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/agenthost/bots/internal/keyfile"
	"github.com/agenthost/bots/wake/agents"
)

// Store is an agents.SessionStore in a folder: one file per key, named by
// the key in base64url, holding the SessionRecord as JSON. A file holding only
// an id on one line (as kept before records) is read as a SessionRecord of
// that id. The folder is made (mode 0700) on the first Save.
type Store struct {
	// Dir is the folder.
	Dir string
}

// Path is the file of key's record.
func (f Store) Path(key string) string {
	return filepath.Join(f.Dir, base64.RawURLEncoding.EncodeToString([]byte(key))+".id")
}

func (f Store) files() *keyfile.Store[string, agents.SessionRecord] {
	return keyfile.New(keyfile.Config[string, agents.SessionRecord]{
		Path:   func(key string) (string, error) { return f.Path(key), nil },
		Decode: decodeRecord,
	})
}

// decodeRecord reads a record's file: JSON, or an id alone on one line as
// kept before records.
func decodeRecord(data []byte) (agents.SessionRecord, bool, error) {
	text := strings.TrimSpace(string(data))
	if !strings.HasPrefix(text, "{") {
		return agents.SessionRecord{ID: text}, text != "", nil
	}
	var r agents.SessionRecord
	if err := json.Unmarshal([]byte(text), &r); err != nil {
		return agents.SessionRecord{}, false, err
	}
	return r, r.ID != "", nil
}

// Load returns the record kept for key.
func (f Store) Load(ctx context.Context, key string) (agents.SessionRecord, bool, error) {
	r, ok, err := f.files().Get(key)
	if err != nil {
		return agents.SessionRecord{}, false, fmt.Errorf("agents: reading a session record: %w", err)
	}
	return r, ok, nil
}

// Save keeps r for key, crash-safe: a temp file fsynced and renamed over
// the key's file, and the folder (made mode 0700 when missing) fsynced.
func (f Store) Save(ctx context.Context, key string, r agents.SessionRecord) error {
	if err := f.files().Put(key, r); err != nil {
		return fmt.Errorf("agents: saving a session record: %w", err)
	}
	return nil
}

var _ agents.SessionStore = Store{}
