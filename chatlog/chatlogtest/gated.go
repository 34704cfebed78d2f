package chatlogtest

import (
	"context"
	"sync"

	"github.com/agenthost/bots/chatlog"
	"github.com/agenthost/bots/chatlog/memchatlog"
)

// Gated are shared logs in memory whose appends wait, once the gate is
// shut, until it opens again: a database gone slow, for tests of what a
// slow write holds up. The zero Gated is not usable; set Logs.
type Gated struct {
	*memchatlog.Logs
	mu     sync.Mutex
	shut   chan struct{} // closed to open the gate; nil while it is open
	waited chan struct{} // closed when an append first waits at the gate
}

// Shut makes the appends from now on wait: waited is closed once one
// waits, and open (which may be called more than once) lets them go.
func (g *Gated) Shut() (waited <-chan struct{}, open func()) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.shut, g.waited = make(chan struct{}), make(chan struct{})
	shut := g.shut
	return g.waited, sync.OnceFunc(func() { close(shut) })
}

// AppendAt waits at the gate while it is shut, or until ctx ends, then
// appends as memchatlog.Logs does.
func (g *Gated) AppendAt(ctx context.Context, key chatlog.Key, n int64, line []byte, sync bool) error {
	if err := g.wait(ctx); err != nil {
		return err
	}
	return g.Logs.AppendAt(ctx, key, n, line, sync)
}

// Append waits at the gate as AppendAt does.
func (g *Gated) Append(ctx context.Context, key chatlog.Key, line []byte, sync bool) error {
	if err := g.wait(ctx); err != nil {
		return err
	}
	return g.Logs.Append(ctx, key, line, sync)
}

func (g *Gated) wait(ctx context.Context) error {
	g.mu.Lock()
	shut, waited := g.shut, g.waited
	if shut != nil {
		select {
		case <-waited:
		default:
			close(waited)
		}
	}
	g.mu.Unlock()
	if shut == nil {
		return nil
	}
	select {
	case <-shut:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
