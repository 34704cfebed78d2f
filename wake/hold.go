package wake

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/agenthost/bots/internal/tick"
	"github.com/agenthost/bots/lease"
)

// A Waker with Leases (several instances on one database) runs the back
// session of a (bot, person, name) only while it holds that key's lease:
// a main turn takes it before it finds or starts the session, and the
// Waker lets it go once no main turn of its own needs it and the session
// is idle (Idler). Meanwhile it renews it every TTL/3. A main turn on an
// instance that does not hold the lease waits for it, trying again after
// 10 ms, then twice as long each time up to LeasePoll. An instance that
// takes the lease with a token other than the last it held reads the
// session back from the shared log (Reloader) before it continues it:
// another instance ran it meanwhile. Every write made for the key carries
// the token (lease.WithFence): the row, and the back session's log lines,
// so that a holder whose lease was taken over is refused by the database.

// leaseKey is the key of the lease of a (bot, person, name): back: and
// the three as a JSON array, which no two triples share.
func leaseKey(bot, person, name string) string {
	data, _ := json.Marshal([]string{bot, person, name})
	return "back:" + string(data)
}

// holding is the lease this Waker holds for one key.
type holding struct {
	lease   lease.Lease
	n       int    // main turns using it
	session string // the back session it was taken for, once known
	stop    context.CancelFunc
	// released, when not nil, is closed once the lease is let go: a
	// turn that finds it set waits, then takes the lease anew.
	released chan struct{}
	// ready is closed once the turn that took the lease has found its
	// session (read it back from the log on a takeover): the turns that
	// share the lease wait for it, so none uses the copy read over.
	ready chan struct{}
}

// hold takes the lease of key for a main turn, waiting for it while
// another instance holds it; progress is told once when it waits. It
// returns the fence the turn's writes carry and whether the lease was
// taken over (not the continuation of the one this Waker held last). The
// turn that takes it must call found(key) once it has found its session;
// the turns that share it wait for that.
func (w *Waker) hold(ctx context.Context, key string, progress func(string)) (lease.Fence, bool, error) {
	told := false
	// The holder is often letting go this very moment (its last turn
	// ended): try again soon, then less and less often, up to LeasePoll.
	wait := min(10*time.Millisecond, w.leasePoll)
	for {
		w.leaseMu.Lock()
		if h := w.held[key]; h != nil && h.released != nil {
			released := h.released
			w.leaseMu.Unlock()
			select {
			case <-released:
				continue
			case <-ctx.Done():
				return lease.Fence{}, false, ctx.Err()
			}
		} else if h != nil {
			h.n++
			ready := h.ready
			w.leaseMu.Unlock()
			select {
			case <-ready:
				return lease.Fence{Key: key, Token: h.lease.Token}, false, nil
			case <-ctx.Done():
				w.unhold(key)
				return lease.Fence{}, false, ctx.Err()
			}
		}
		w.leaseMu.Unlock()
		l, ok, err := w.leases.Acquire(ctx, key, w.holder, w.leaseTTL)
		if err != nil {
			if ctx.Err() != nil {
				return lease.Fence{}, false, ctx.Err()
			}
			return lease.Fence{}, false, failf("The lease of the back session could not be taken: %v", err)
		}
		if ok {
			w.leaseMu.Lock()
			if h := w.held[key]; h != nil { // another turn of ours took it meanwhile
				w.leaseMu.Unlock()
				continue
			}
			rctx, stop := context.WithCancel(w.base)
			h := &holding{lease: l, n: 1, stop: stop, ready: make(chan struct{})}
			w.held[key] = h
			takeover := w.tokens[key] != l.Token
			if takeover {
				w.takeovers.Inc()
			}
			w.tokens[key] = l.Token
			w.mu.Lock()
			started := w.goLocked(func() { w.renew(rctx, key, h) })
			w.mu.Unlock()
			w.leaseMu.Unlock()
			if !started {
				stop()
				return lease.Fence{}, false, context.Canceled
			}
			return lease.Fence{Key: key, Token: l.Token}, takeover, nil
		}
		if !told && progress != nil {
			told = true
			progress("Waiting for the instance that runs this back session")
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return lease.Fence{}, false, ctx.Err()
		case <-t.C:
		}
		wait = min(wait*2, w.leasePoll)
	}
}

// renew renews h every TTL/3 until ctx ends; a lease lost is let go, so
// the next turn takes it again (and reads the session back).
func (w *Waker) renew(ctx context.Context, key string, h *holding) {
	tick.Every(ctx, w.leaseTTL/3, func() bool {
		err := w.leases.Renew(ctx, key, w.holder, h.lease.Token, w.leaseTTL)
		switch {
		case ctx.Err() != nil:
			return false
		case errors.Is(err, lease.ErrLost):
			w.log.Warn("wake: the lease of a back session was taken over; its writes from here are refused", "key", key, "token", h.lease.Token)
			w.leaseMu.Lock()
			if w.held[key] == h {
				delete(w.held, key)
			}
			w.leaseMu.Unlock()
			h.stop()
			return false
		case err != nil:
			w.log.Warn("wake: the lease of a back session could not be renewed", "key", key, "err", err)
		}
		return true
	})
}

// found tells the turns sharing key's lease that the turn that took it
// has found its session (session, "" when it found none): they may go on.
func (w *Waker) found(key, session string) {
	w.leaseMu.Lock()
	defer w.leaseMu.Unlock()
	if h := w.held[key]; h != nil {
		if session != "" {
			h.session = session
		}
		select {
		case <-h.ready:
		default:
			close(h.ready)
		}
	}
}

// unhold ends a main turn's use of key's lease. The last use lets the
// lease go once the back session is idle, in a goroutine Close waits for;
// a turn that takes it meanwhile keeps it.
func (w *Waker) unhold(key string) {
	w.leaseMu.Lock()
	h := w.held[key]
	if h == nil {
		w.leaseMu.Unlock()
		return
	}
	if h.n--; h.n > 0 {
		w.leaseMu.Unlock()
		return
	}
	w.leaseMu.Unlock()
	w.mu.Lock()
	defer w.mu.Unlock()
	// A closed Waker lets its leases expire: the process is going away,
	// and its turns may be running still.
	w.goLocked(func() { w.release(key, h) })
}

// release lets h go once its session is idle, unless a turn took it again.
func (w *Waker) release(key string, h *holding) {
	// A long turn keeps the lease, renewed, as long as it runs.
	w.leaseMu.Lock()
	session := h.session // found sets it under leaseMu
	w.leaseMu.Unlock()
	if idler, ok := w.host.(Idler); ok && session != "" {
		if err := idler.Idle(w.base, session); err != nil {
			return // the Waker is closing: the lease expires
		}
	}
	w.leaseMu.Lock()
	if w.held[key] != h || h.n > 0 || h.released != nil {
		w.leaseMu.Unlock()
		return
	}
	h.released = make(chan struct{})
	w.leaseMu.Unlock()
	h.stop()
	ctx, cancel := context.WithTimeout(w.base, w.leaseTTL)
	defer cancel()
	if err := w.leases.Release(ctx, key, w.holder, h.lease.Token); err != nil && w.base.Err() == nil {
		w.log.Warn("wake: the lease of a back session could not be let go; it expires", "key", key, "err", err)
	}
	w.leaseMu.Lock()
	if w.held[key] == h {
		delete(w.held, key)
	}
	close(h.released)
	w.leaseMu.Unlock()
}

// releaseAll lets go of every lease the Waker holds, when it closes, so
// that another instance takes its back sessions over at once rather than
// when the leases expire. A turn of this process still ending meanwhile
// is fenced: its writes carry the old token.
func (w *Waker) releaseAll() {
	if w.leases == nil {
		return
	}
	w.leaseMu.Lock()
	held := w.held
	w.held = map[string]*holding{}
	w.leaseMu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), releaseWait)
	defer cancel()
	for key, h := range held {
		h.stop()
		if err := w.leases.Release(ctx, key, w.holder, h.lease.Token); err != nil {
			w.log.Warn("wake: a lease could not be let go at close; it expires", "key", key, "err", err)
		}
	}
}

// releaseWait bounds letting go of the leases at close.
const releaseWait = 5 * time.Second
