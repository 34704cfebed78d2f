package acp

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/agenthost/bots/internal/keyfile"
)

// Reasons a Record gives for a fresh agent session.
const (
	// ReasonNoLoad: the agent does not advertise session/load.
	ReasonNoLoad = "agent does not support session/load"
	// ReasonNoEarlier: the Store held no agent session for the key.
	ReasonNoEarlier = "no earlier session"
	// ReasonLoadFailed prefixes the error of a session/load that failed.
	ReasonLoadFailed = "session/load failed: "
)

// Record is what a Store keeps of a back session's agent session: its id,
// and whether the last start of a child continued it with session/load or
// started it fresh, and why.
type Record struct {
	// ID is the agent session id.
	ID string `json:"id"`
	// StartedAt is when the agent session was started (session/new); zero
	// for a record read from an old one-line id file.
	StartedAt time.Time `json:"startedAt,omitzero"`
	// LoadedAt is when it was last continued with session/load; zero when
	// it never was.
	LoadedAt time.Time `json:"loadedAt,omitzero"`
	// Fresh is true when the last start of a child started a new agent
	// session, and Reason says why (ReasonNoLoad, ReasonNoEarlier or
	// ReasonLoadFailed and the error); false when it continued ID.
	Fresh  bool   `json:"fresh"`
	Reason string `json:"reason,omitempty"`
}

// Store keeps the Record of each back session's agent session, by a key
// that names the back session (Config.Key), so that a session started
// again continues the same agent session with session/load, and says when
// it could not. Its methods may be called concurrently.
type Store interface {
	// Load returns the record kept for key; ok is false when there is
	// none.
	Load(ctx context.Context, key string) (r Record, ok bool, err error)
	// Save keeps r for key, over any record kept before.
	Save(ctx context.Context, key string, r Record) error
}

// MemStore is a Store in memory. The zero value is ready to use.
type MemStore struct {
	mu   sync.Mutex
	recs map[string]Record
}

// Load returns the record kept for key.
func (m *MemStore) Load(ctx context.Context, key string) (Record, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.recs[key]
	return r, ok, nil
}

// Save keeps r for key.
func (m *MemStore) Save(ctx context.Context, key string, r Record) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.recs == nil {
		m.recs = map[string]Record{}
	}
	m.recs[key] = r
	return nil
}

// FileStore is a Store in a folder: one file per key, named by the key in
// base64url, holding the Record as JSON. A file holding only an id on one
// line (as kept before records) is read as a Record of that id. The folder
// is made (mode 0700) on the first Save.
type FileStore struct {
	// Dir is the folder.
	Dir string
}

// Path is the file of key's record.
func (f FileStore) Path(key string) string {
	return filepath.Join(f.Dir, base64.RawURLEncoding.EncodeToString([]byte(key))+".id")
}

func (f FileStore) files() *keyfile.Store[string, Record] {
	return keyfile.New(keyfile.Config[string, Record]{
		Path:   func(key string) (string, error) { return f.Path(key), nil },
		Decode: decodeRecord,
	})
}

// decodeRecord reads a record's file: JSON, or an id alone on one line as
// kept before records.
func decodeRecord(data []byte) (Record, bool, error) {
	text := strings.TrimSpace(string(data))
	if !strings.HasPrefix(text, "{") {
		return Record{ID: text}, text != "", nil
	}
	var r Record
	if err := json.Unmarshal([]byte(text), &r); err != nil {
		return Record{}, false, err
	}
	return r, r.ID != "", nil
}

// Load returns the record kept for key.
func (f FileStore) Load(ctx context.Context, key string) (Record, bool, error) {
	r, ok, err := f.files().Get(key)
	if err != nil {
		return Record{}, false, fmt.Errorf("acp: reading a session record: %w", err)
	}
	return r, ok, nil
}

// Save keeps r for key, crash-safe: a temp file fsynced and renamed over
// the key's file, and the folder (made mode 0700 when missing) fsynced.
func (f FileStore) Save(ctx context.Context, key string, r Record) error {
	if err := f.files().Put(key, r); err != nil {
		return fmt.Errorf("acp: saving a session record: %w", err)
	}
	return nil
}
