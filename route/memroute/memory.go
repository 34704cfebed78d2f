package memroute

import (
	"context"
	"sync"
)

// Memory is what the relay remembers (route/relay's Memory) in memory:
// forgotten when the process ends. The zero Memory is empty and ready.
type Memory struct {
	mu     sync.Mutex
	values map[string][]byte
}

// Get returns the value of key, nil when there is none.
func (m *Memory) Get(_ context.Context, key string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.values[key], nil
}

// Update replaces the value of key by what fn makes of it.
func (m *Memory) Update(_ context.Context, key string, fn func(old []byte) ([]byte, error)) error {
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
