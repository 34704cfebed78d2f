package catalog

import (
	"context"

	"github.com/agenthost/bots/record"
)

// recentCap is how many of the latest applied changes the catalogue
// remembers for Await: a writer asks about its change microseconds after
// the store made it, far fewer changes than this later.
const recentCap = 4096

// changeKey names one change of the Source for Await: the bot and the etag
// it made, or the bot's deletion (etag "").
type changeKey struct{ id, etag string }

func keyOfChange(id string, ch record.Change) changeKey {
	if ch.Kind == record.Deleted {
		return changeKey{id: id}
	}
	return changeKey{id: id, etag: ch.Entry.ETag}
}

// Await returns once the catalogue has applied the change that gave bot id
// the etag, or with etag "" the bot's deletion: a subscribe or watch
// after it sees the change (read-your-writes). The bot service awaits each
// make, edit and delete before it acknowledges it. It returns ctx's error
// when ctx ends first, and nil at once when the catalogue is closed.
func (c *Catalog) Await(ctx context.Context, id, etag string) error {
	k := changeKey{id: id, etag: etag}
	c.mu.Lock()
	if c.closed || c.appliedLocked(k) {
		c.mu.Unlock()
		return nil
	}
	ready := make(chan struct{})
	c.waiters[k] = append(c.waiters[k], ready)
	c.mu.Unlock()
	select {
	case <-ready:
		return nil
	case <-c.done:
		return nil
	case <-ctx.Done():
		c.mu.Lock()
		// forget the waiter, unless apply took it meanwhile.
		ws := c.waiters[k]
		for i, w := range ws {
			if w == ready {
				ws = append(ws[:i], ws[i+1:]...)
				break
			}
		}
		if len(ws) == 0 {
			delete(c.waiters, k)
		} else {
			c.waiters[k] = ws
		}
		c.mu.Unlock()
		return ctx.Err()
	}
}

// appliedLocked reports whether the change k was applied. Called with mu
// held.
func (c *Catalog) appliedLocked(k changeKey) bool {
	if _, ok := c.recent[k]; ok {
		return true
	}
	e, ok := c.bots[k.id]
	return k.etag != "" && ok && e.etag == k.etag
}

// appliedChangeLocked remembers that the change k was applied and wakes
// whoever awaits it. Called with mu held.
func (c *Catalog) appliedChangeLocked(k changeKey) {
	if _, ok := c.recent[k]; !ok {
		c.recent[k] = struct{}{}
		c.recentQ = append(c.recentQ, k)
		if len(c.recentQ) > recentCap {
			delete(c.recent, c.recentQ[0])
			c.recentQ = c.recentQ[1:]
		}
	}
	for _, w := range c.waiters[k] {
		close(w)
	}
	delete(c.waiters, k)
}
