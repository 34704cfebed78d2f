package fileroute

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

// Memory is what the relay remembers (route/relay's Memory) in a folder,
// one file a key ("conn/libera" is conn-libera.json), written
// crash-safely. It is one process's, and one Memory a folder: instances
// that share routes through a database share a memory there instead.
type Memory struct {
	dir string
	mu  sync.Mutex
}

// NewMemory returns the Memory of the folder dir, made when first
// written.
func NewMemory(dir string) *Memory { return &Memory{dir: dir} }

func (m *Memory) path(key string) string {
	return filepath.Join(m.dir, strings.ReplaceAll(key, "/", "-")+".json")
}

// Get reads the file of key, nil when there is none.
func (m *Memory) Get(_ context.Context, key string) ([]byte, error) {
	data, err := os.ReadFile(m.path(key))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("cannot read %s: %w", m.path(key), err)
	}
	return data, nil
}

// Update rewrites the file of key under the Memory's lock.
func (m *Memory) Update(ctx context.Context, key string, fn func(old []byte) ([]byte, error)) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	old, err := m.Get(ctx, key)
	if err != nil {
		return err
	}
	data, err := fn(old)
	if err != nil {
		return err
	}
	if err := atomicfile.MkdirAll(m.dir, 0o700); err != nil {
		return err
	}
	return atomicfile.Write(m.path(key), data, 0o600)
}
