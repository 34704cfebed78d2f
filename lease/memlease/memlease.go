// Package memlease keeps leases (lease.Leases) in memory, for one process
// and tests.
package memlease

import (
	"context"
	"sync"
	"time"

	"github.com/agenthost/bots/lease"
)

// Leases keeps leases in memory. The zero value is ready to use. Its
// tokens are drawn from one counter for every key.
type Leases struct {
	// Now returns the time; nil means time.Now.
	Now func() time.Time

	mu     sync.Mutex
	leases map[string]lease.Lease
	last   int64 // the last token given, of any key
}

var _ lease.Leases = (*Leases)(nil)

func (m *Leases) now() time.Time {
	if m.Now != nil {
		return m.Now()
	}
	return time.Now()
}

// Acquire takes key for holder.
func (m *Leases) Acquire(ctx context.Context, key, holder string, ttl time.Duration) (lease.Lease, bool, error) {
	if err := lease.CheckArgs(key, holder, ttl); err != nil {
		return lease.Lease{}, false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	l, held := m.leases[key]
	live := held && now.Before(l.Expires)
	if live && l.Holder != holder {
		return l, false, nil
	}
	if !live {
		m.last++
		l.Token = m.last
	}
	l.Key, l.Holder, l.Expires = key, holder, now.Add(ttl)
	if m.leases == nil {
		m.leases = map[string]lease.Lease{}
	}
	m.leases[key] = l
	return l, true, nil
}

// Renew extends holder's lease.
func (m *Leases) Renew(ctx context.Context, key, holder string, token int64, ttl time.Duration) error {
	if err := lease.CheckArgs(key, holder, ttl); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	l, held := m.leases[key]
	if !held || l.Holder != holder || l.Token != token || l.Expires.IsZero() {
		return lease.ErrLost
	}
	l.Expires = m.now().Add(ttl)
	m.leases[key] = l
	return nil
}

// Release ends holder's lease.
func (m *Leases) Release(ctx context.Context, key, holder string, token int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if l, held := m.leases[key]; held && l.Holder == holder && l.Token == token {
		l.Expires = time.Time{}
		m.leases[key] = l
	}
	return nil
}

// Prune deletes the leases released, or expired more than grace ago.
func (m *Leases) Prune(ctx context.Context, grace time.Duration) (int, error) {
	if err := lease.CheckGrace(grace); err != nil {
		return 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	before := m.now().Add(-grace)
	n := 0
	for key, l := range m.leases {
		if l.Expires.IsZero() || l.Expires.Before(before) {
			delete(m.leases, key)
			n++
		}
	}
	return n, nil
}

// Holds reports whether f is its key's lease: whether a store that
// checks fences would take a write made with it.
func (m *Leases) Holds(f lease.Fence) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	l, ok := m.leases[f.Key]
	return ok && l.Token == f.Token
}
