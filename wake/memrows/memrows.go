// Package memrows keeps back-session rows (wake.Rows) in memory, for one
// process and tests.
package memrows

import (
	"context"
	"sync"

	"github.com/agenthost/bots/wake"
)

// Rows keeps rows in memory. The zero value is ready to use.
type Rows struct {
	mu   sync.Mutex
	rows map[rowKey]wake.Row
}

// rowKey names a row: (bot, person, name).
type rowKey struct{ bot, person, name string }

// Get returns the row of (bot, person, name).
func (m *Rows) Get(ctx context.Context, bot, person, name string) (wake.Row, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.rows[rowKey{bot, person, name}]
	return r, ok, nil
}

// Put writes the row.
func (m *Rows) Put(ctx context.Context, row wake.Row) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.rows == nil {
		m.rows = map[rowKey]wake.Row{}
	}
	m.rows[rowKey{row.Bot, row.Person, row.Name}] = row
	return nil
}

// RemoveBot removes every row of bot.
func (m *Rows) RemoveBot(ctx context.Context, bot string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k := range m.rows {
		if k.bot == bot {
			delete(m.rows, k)
		}
	}
	return nil
}

var _ wake.Rows = (*Rows)(nil)
