package relay

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/agenthost/bots/internal/atomicfile"
)

// Memory keeps what the relay remembers across restarts, and across the
// instances that share it, as whole values by key: each connection's
// chats and the message ids it passed on, the pairings people confirmed,
// and the pairing codes that wait. Its methods are safe for concurrent
// use.
type Memory interface {
	// Get returns the value of key, nil when there is none.
	Get(ctx context.Context, key string) ([]byte, error)
	// Update replaces the value of key by what f makes of it (nil when
	// there is none), atomically against every other Update of key, by
	// this instance or another sharing the memory. f may be called more
	// than once; its error ends the update, which then writes nothing.
	Update(ctx context.Context, key string, f func(old []byte) ([]byte, error)) error
}

// The keys of a Memory.
const (
	pairingsKey = "pairings" // identity → person
	codesKey    = "codes"    // pairing code → the identity it was given to, and until when
)

// connKey is the key of a connection's memo.
func connKey(id string) string { return "conn/" + id }

// Files is a Memory in a folder, one file a key ("conn/libera" is
// conn-libera.json), written crash-safely. It is one process's: instances
// that share routes through a database share a Memory there instead.
type Files struct {
	dir string
	mu  sync.Mutex
}

// NewFiles returns the Memory of the folder dir, made when first written.
func NewFiles(dir string) *Files { return &Files{dir: dir} }

func (f *Files) path(key string) string {
	return filepath.Join(f.dir, strings.ReplaceAll(key, "/", "-")+".json")
}

// Get reads the file of key.
func (f *Files) Get(_ context.Context, key string) ([]byte, error) {
	data, err := os.ReadFile(f.path(key))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cannot read %s: %w", f.path(key), err)
	}
	return data, nil
}

// Update rewrites the file of key under the Memory's lock.
func (f *Files) Update(ctx context.Context, key string, fn func(old []byte) ([]byte, error)) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	old, err := f.Get(ctx, key)
	if err != nil {
		return err
	}
	data, err := fn(old)
	if err != nil {
		return err
	}
	if err := atomicfile.MkdirAll(f.dir, 0o700); err != nil {
		return err
	}
	return atomicfile.Write(f.path(key), data, 0o600)
}

// Mem is a Memory in memory: what a relay with no State forgets at its
// end.
type Mem struct {
	mu     sync.Mutex
	values map[string][]byte
}

// Get returns the value of key.
func (m *Mem) Get(_ context.Context, key string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.values[key], nil
}

// Update replaces the value of key.
func (m *Mem) Update(_ context.Context, key string, fn func(old []byte) ([]byte, error)) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	data, err := fn(m.values[key])
	if err != nil {
		return err
	}
	if m.values == nil {
		m.values = map[string][]byte{}
	}
	m.values[key] = data
	return nil
}
