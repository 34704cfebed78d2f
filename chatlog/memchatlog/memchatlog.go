// Package memchatlog keeps chat logs in memory (chatlog.Logs and
// chatlog.Shared), for tests and hosts that keep nothing.
package memchatlog

import (
	"context"
	"fmt"
	"io/fs"
	"slices"
	"sync"

	"github.com/agenthost/bots/chatlog"
)

// Logs keeps logs in memory. It is a chatlog.Shared too, whose followers
// hear the writes made through the same Logs: processes in a test sharing
// it. The zero value is ready to use.
type Logs struct {
	mu        sync.Mutex
	logs      map[chatlog.Key][][]byte
	followers map[*memFollower]struct{}
}

var _ chatlog.Logs = (*Logs)(nil)

// Create makes the log with first.
func (m *Logs) Create(ctx context.Context, key chatlog.Key, first []byte) error {
	if err := key.Check(); err != nil {
		return err
	}
	if err := chatlog.CheckLine(first); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.logs[key]; ok {
		return fmt.Errorf("chat log %s: %w", key, fs.ErrExist)
	}
	if m.logs == nil {
		m.logs = map[chatlog.Key][][]byte{}
	}
	m.logs[key] = [][]byte{slices.Clone(first)}
	m.tellLocked(key, 1)
	return nil
}

// Append appends line.
func (m *Logs) Append(ctx context.Context, key chatlog.Key, line []byte, sync bool) error {
	return m.appendAt(key, 0, false, line)
}

// Read returns copies of the log's lines.
func (m *Logs) Read(ctx context.Context, key chatlog.Key) ([][]byte, []string, error) {
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
func (m *Logs) List(ctx context.Context, kind chatlog.Kind) ([]chatlog.Key, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []chatlog.Key
	for k := range m.logs {
		if k.Kind == kind {
			out = append(out, k)
		}
	}
	return out, nil
}

// Remove removes the log.
func (m *Logs) Remove(ctx context.Context, key chatlog.Key) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.logs[key]; ok {
		delete(m.logs, key)
		m.tellLocked(key, 0)
	}
	return nil
}

var _ chatlog.Shared = (*Logs)(nil)

// AppendAt appends line when the log holds n lines.
func (m *Logs) AppendAt(ctx context.Context, key chatlog.Key, n int64, line []byte, sync bool) error {
	return m.appendAt(key, n, true, line)
}

// appendAt appends line, when at is set only if the log holds n lines.
func (m *Logs) appendAt(key chatlog.Key, n int64, at bool, line []byte) error {
	if err := key.Check(); err != nil {
		return err
	}
	if err := chatlog.CheckLine(line); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	lines, ok := m.logs[key]
	if !ok {
		return fmt.Errorf("chat log %s: %w", key, fs.ErrNotExist)
	}
	if at && int64(len(lines)) != n {
		return fmt.Errorf("chat log %s: %w", key, chatlog.ErrConflict)
	}
	m.logs[key] = append(lines, slices.Clone(line))
	m.tellLocked(key, int64(len(lines)+1))
	return nil
}

// ReadAfter returns copies of the log's lines after its first n.
func (m *Logs) ReadAfter(ctx context.Context, key chatlog.Key, n int64) ([][]byte, error) {
	lines, _, err := m.Read(ctx, key)
	if err != nil {
		return nil, err
	}
	return lines[min(max(n, 0), int64(len(lines))):], nil
}

// Heads returns the count of lines of every log of kind.
func (m *Logs) Heads(ctx context.Context, kind chatlog.Kind) (map[chatlog.Key]int64, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[chatlog.Key]int64{}
	for k, lines := range m.logs {
		if k.Kind == kind {
			out[k] = int64(len(lines))
		}
	}
	return out, nil
}

// memHeard is one write a follower of a Logs has yet to hear.
type memHeard struct {
	key chatlog.Key
	n   int64
}

// memFollower is one Follow's queue of writes.
type memFollower struct {
	kind    chatlog.Kind
	queue   []memHeard
	waiting chan struct{} // has a value when the queue may not be empty
}

// Follow calls changed with every write to a log of kind made through m
// after it began, in order.
func (m *Logs) Follow(ctx context.Context, kind chatlog.Kind, changed func(chatlog.Key, int64)) error {
	f := &memFollower{kind: kind, waiting: make(chan struct{}, 1)}
	m.mu.Lock()
	if m.followers == nil {
		m.followers = map[*memFollower]struct{}{}
	}
	m.followers[f] = struct{}{}
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		delete(m.followers, f)
		m.mu.Unlock()
	}()
	changed(chatlog.Key{}, 0)
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-f.waiting:
		}
		m.mu.Lock()
		queue := f.queue
		f.queue = nil
		m.mu.Unlock()
		for _, h := range queue {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			changed(h.key, h.n)
		}
	}
}

// tellLocked queues a write for every follower of its kind.
func (m *Logs) tellLocked(key chatlog.Key, n int64) {
	for f := range m.followers {
		if f.kind != key.Kind {
			continue
		}
		f.queue = append(f.queue, memHeard{key, n})
		select {
		case f.waiting <- struct{}{}:
		default:
		}
	}
}
