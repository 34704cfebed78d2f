// Package memsessions keeps agents' session records
// (agents.SessionStore) in memory, for one process and tests.
package memsessions

import (
	"context"
	"sync"

	"github.com/agenthost/bots/wake/agents"
)

// Store is an agents.SessionStore in memory. The zero value is ready to use.
type Store struct {
	mu   sync.Mutex
	recs map[string]agents.SessionRecord
}

// Load returns the record kept for key.
func (m *Store) Load(ctx context.Context, key string) (agents.SessionRecord, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.recs[key]
	return r, ok, nil
}

// Save keeps r for key.
func (m *Store) Save(ctx context.Context, key string, r agents.SessionRecord) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.recs == nil {
		m.recs = map[string]agents.SessionRecord{}
	}
	m.recs[key] = r
	return nil
}

var _ agents.SessionStore = (*Store)(nil)
