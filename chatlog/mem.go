package chatlog

import (
	"context"
	"fmt"
	"io/fs"
	"slices"
	"sync"
)

// Mem keeps logs in memory, for tests and hosts that keep nothing. The
// zero value is ready to use.
type Mem struct {
	mu   sync.Mutex
	logs map[Key][][]byte
}

var _ Logs = (*Mem)(nil)

// Create makes the log with first.
func (m *Mem) Create(ctx context.Context, key Key, first []byte) error {
	if err := key.Check(); err != nil {
		return err
	}
	if err := CheckLine(first); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.logs[key]; ok {
		return fmt.Errorf("chat log %s: %w", key, fs.ErrExist)
	}
	if m.logs == nil {
		m.logs = map[Key][][]byte{}
	}
	m.logs[key] = [][]byte{slices.Clone(first)}
	return nil
}

// Append appends line.
func (m *Mem) Append(ctx context.Context, key Key, line []byte, sync bool) error {
	if err := key.Check(); err != nil {
		return err
	}
	if err := CheckLine(line); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	lines, ok := m.logs[key]
	if !ok {
		return fmt.Errorf("chat log %s: %w", key, fs.ErrNotExist)
	}
	m.logs[key] = append(lines, slices.Clone(line))
	return nil
}

// Read returns copies of the log's lines.
func (m *Mem) Read(ctx context.Context, key Key) ([][]byte, []string, error) {
	if err := key.Check(); err != nil {
		return nil, nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	lines, ok := m.logs[key]
	if !ok {
		return nil, nil, fmt.Errorf("chat log %s: %w", key, fs.ErrNotExist)
	}
	out := make([][]byte, len(lines))
	for i, l := range lines {
		out[i] = slices.Clone(l)
	}
	return out, nil, nil
}

// List returns the keys of the logs of kind.
func (m *Mem) List(ctx context.Context, kind Kind) ([]Key, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Key
	for k := range m.logs {
		if k.Kind == kind {
			out = append(out, k)
		}
	}
	return out, nil
}

// Remove removes the log.
func (m *Mem) Remove(ctx context.Context, key Key) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.logs, key)
	return nil
}
