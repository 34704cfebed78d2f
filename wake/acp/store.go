package acp

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/agenthost/bots/internal/atomicfile"
)

// Store keeps the agent session id of each back session, by a key that
// names the back session (Config.Key), so that a session started again
// continues the same agent session with session/load. Its methods may be
// called concurrently.
type Store interface {
	// Load returns the agent session id kept for key; ok is false when
	// there is none.
	Load(ctx context.Context, key string) (id string, ok bool, err error)
	// Save keeps id for key, over any id kept before.
	Save(ctx context.Context, key, id string) error
}

// MemStore is a Store in memory. The zero value is ready to use.
type MemStore struct {
	mu  sync.Mutex
	ids map[string]string
}

// Load returns the id kept for key.
func (m *MemStore) Load(ctx context.Context, key string) (string, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	id, ok := m.ids[key]
	return id, ok, nil
}

// Save keeps id for key.
func (m *MemStore) Save(ctx context.Context, key, id string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.ids == nil {
		m.ids = map[string]string{}
	}
	m.ids[key] = id
	return nil
}

// FileStore is a Store in a folder: one file per key, named by the key in
// base64url, holding the id. The folder is made (mode 0700) on the first
// Save.
type FileStore struct {
	// Dir is the folder.
	Dir string
}

func (f FileStore) path(key string) string {
	return filepath.Join(f.Dir, base64.RawURLEncoding.EncodeToString([]byte(key))+".id")
}

// Load returns the id kept for key.
func (f FileStore) Load(ctx context.Context, key string) (string, bool, error) {
	data, err := os.ReadFile(f.path(key))
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("acp: reading a session id: %w", err)
	}
	id := strings.TrimSpace(string(data))
	return id, id != "", nil
}

// Save keeps id for key, crash-safe: a temp file fsynced and renamed over
// the key's file, and the folder fsynced.
func (f FileStore) Save(ctx context.Context, key, id string) error {
	if err := atomicfile.MkdirAll(f.Dir, 0o700); err != nil {
		return fmt.Errorf("acp: session id folder: %w", err)
	}
	if err := atomicfile.Write(f.path(key), []byte(id+"\n"), 0o600); err != nil {
		return fmt.Errorf("acp: saving a session id: %w", err)
	}
	return nil
}
