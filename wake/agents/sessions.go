package agents

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

// Reasons a SessionRecord gives for a fresh agent session.
const (
	// ReasonNoLoad: the agent does not advertise session/load.
	ReasonNoLoad = "agent does not support session/load"
	// ReasonNoEarlier: the SessionStore held no agent session for the key.
	ReasonNoEarlier = "no earlier session"
	// ReasonLoadFailed prefixes the error of a session/load that failed.
	ReasonLoadFailed = "session/load failed: "
)

// SessionRecord is what a SessionStore keeps of a back session's agent
// session: its id, and whether the last start of a child continued it with
// session/load or started it fresh, and why.
type SessionRecord struct {
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

// SessionStore keeps the SessionRecord of each back session's agent session,
// by a key that names the back session (acp.Config.Key), so that a session
// started again continues the same agent session with session/load, and says
// when it could not. Its methods may be called concurrently.
type SessionStore interface {
	// Load returns the record kept for key; ok is false when there is
	// none.
	Load(ctx context.Context, key string) (r SessionRecord, ok bool, err error)
	// Save keeps r for key, over any record kept before.
	Save(ctx context.Context, key string, r SessionRecord) error
}

// MemSessionStore is a SessionStore in memory. The zero value is ready to use.
type MemSessionStore struct {
	mu   sync.Mutex
	recs map[string]SessionRecord
}

// Load returns the record kept for key.
func (m *MemSessionStore) Load(ctx context.Context, key string) (SessionRecord, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.recs[key]
	return r, ok, nil
}

// Save keeps r for key.
func (m *MemSessionStore) Save(ctx context.Context, key string, r SessionRecord) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.recs == nil {
		m.recs = map[string]SessionRecord{}
	}
	m.recs[key] = r
	return nil
}

// FileSessionStore is a SessionStore in a folder: one file per key, named by
// the key in base64url, holding the SessionRecord as JSON. A file holding only
// an id on one line (as kept before records) is read as a SessionRecord of
// that id. The folder is made (mode 0700) on the first Save.
type FileSessionStore struct {
	// Dir is the folder.
	Dir string
}

// Path is the file of key's record.
func (f FileSessionStore) Path(key string) string {
	return filepath.Join(f.Dir, base64.RawURLEncoding.EncodeToString([]byte(key))+".id")
}

func (f FileSessionStore) files() *keyfile.Store[string, SessionRecord] {
	return keyfile.New(keyfile.Config[string, SessionRecord]{
		Path:   func(key string) (string, error) { return f.Path(key), nil },
		Decode: decodeRecord,
	})
}

// decodeRecord reads a record's file: JSON, or an id alone on one line as
// kept before records.
func decodeRecord(data []byte) (SessionRecord, bool, error) {
	text := strings.TrimSpace(string(data))
	if !strings.HasPrefix(text, "{") {
		return SessionRecord{ID: text}, text != "", nil
	}
	var r SessionRecord
	if err := json.Unmarshal([]byte(text), &r); err != nil {
		return SessionRecord{}, false, err
	}
	return r, r.ID != "", nil
}

// Load returns the record kept for key.
func (f FileSessionStore) Load(ctx context.Context, key string) (SessionRecord, bool, error) {
	r, ok, err := f.files().Get(key)
	if err != nil {
		return SessionRecord{}, false, fmt.Errorf("agents: reading a session record: %w", err)
	}
	return r, ok, nil
}

// Save keeps r for key, crash-safe: a temp file fsynced and renamed over
// the key's file, and the folder (made mode 0700 when missing) fsynced.
func (f FileSessionStore) Save(ctx context.Context, key string, r SessionRecord) error {
	if err := f.files().Put(key, r); err != nil {
		return fmt.Errorf("agents: saving a session record: %w", err)
	}
	return nil
}
