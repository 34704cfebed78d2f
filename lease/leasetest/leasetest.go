// Package leasetest is the conformance suite of lease.Leases: the memory
// and PostgreSQL implementations both pass it.
package leasetest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/bots/lease"
)

// Harness opens the leases the suite runs against.
type Harness struct {
	// Open returns leases on new, empty storage of their own, for one
	// check. Required.
	Open func(t *testing.T) lease.Leases
	// Again returns another handle on the storage of l, as a second
	// instance opens it. Nil runs those checks on l itself.
	Again func(t *testing.T, l lease.Leases) lease.Leases
	// Holds reports whether a write fenced with f would go in on the
	// storage of l (pglease: FenceSQL; memlease.Leases: Holds). Required.
	Holds func(t *testing.T, l lease.Leases, f lease.Fence) bool
}

// Wait bounds each check.
const Wait = 30 * time.Second

// short is the time to live of the leases the suite lets expire.
const short = 50 * time.Millisecond

// Run runs the suite against h. Its subtests run one after the other.
func Run(t *testing.T, h Harness) {
	if h.Open == nil || h.Holds == nil {
		t.Fatal("leasetest: Harness.Open and Harness.Holds are required")
	}
	again := func(t *testing.T, l lease.Leases) lease.Leases {
		if h.Again == nil {
			return l
		}
		return h.Again(t, l)
	}
	t.Run("AFreeKeyIsAcquired", func(t *testing.T) {
		l := acquire(t, h.Open(t), "k", "a", time.Minute)
		if l.Key != "k" || l.Holder != "a" || l.Token <= 0 || !l.Expires.After(time.Now().Add(-time.Minute)) {
			t.Fatalf("Acquire gave %+v", l)
		}
	})
	t.Run("AnotherHolderIsRefusedWhileTheLeaseLives", func(t *testing.T) {
		ls := h.Open(t)
		mine := acquire(t, ls, "k", "a", time.Minute)
		other, ok, err := again(t, ls).Acquire(ctx(t), "k", "b", time.Minute)
		if err != nil || ok {
			t.Fatalf("a second holder's Acquire = %+v, %v, %v; want refused", other, ok, err)
		}
		if other.Holder != "a" || other.Token != mine.Token {
			t.Fatalf("the refusal names %+v, want the lease of a with token %d", other, mine.Token)
		}
	})
	t.Run("TheHolderAcquiringAgainKeepsItsToken", func(t *testing.T) {
		ls := h.Open(t)
		first := acquire(t, ls, "k", "a", time.Minute)
		if second := acquire(t, ls, "k", "a", time.Minute); second.Token != first.Token {
			t.Fatalf("a renewal by Acquire changed the token %d to %d", first.Token, second.Token)
		}
	})
	t.Run("ReleaseLetsAnotherTakeItOverWithAGreaterToken", func(t *testing.T) {
		ls := h.Open(t)
		a := acquire(t, ls, "k", "a", time.Minute)
		if err := ls.Release(ctx(t), "k", "a", a.Token); err != nil {
			t.Fatal(err)
		}
		b := acquire(t, again(t, ls), "k", "b", time.Minute)
		if b.Token <= a.Token {
			t.Fatalf("the takeover's token %d is not greater than %d", b.Token, a.Token)
		}
		if err := ls.Renew(ctx(t), "k", "a", a.Token, time.Minute); !errors.Is(err, lease.ErrLost) {
			t.Fatalf("the old holder's Renew = %v, want ErrLost", err)
		}
		if err := ls.Release(ctx(t), "k", "a", a.Token); err != nil {
			t.Fatalf("the old holder's Release = %v, want none", err)
		}
		if _, ok, _ := ls.Acquire(ctx(t), "k", "c", time.Minute); ok {
			t.Fatal("an old holder's Release let the lease go")
		}
	})
	t.Run("AnExpiredLeaseIsTakenOverAndItsHolderCannotRenew", func(t *testing.T) {
		ls := h.Open(t)
		a := acquire(t, ls, "k", "a", short)
		b := acquireWithin(t, again(t, ls), "k", "b")
		if b.Token <= a.Token {
			t.Fatalf("the takeover's token %d is not greater than %d", b.Token, a.Token)
		}
		if err := ls.Renew(ctx(t), "k", "a", a.Token, time.Minute); !errors.Is(err, lease.ErrLost) {
			t.Fatalf("the old holder's Renew = %v, want ErrLost", err)
		}
	})
	t.Run("RenewKeepsTheLeaseFromOthers", func(t *testing.T) {
		ls := h.Open(t)
		a := acquire(t, ls, "k", "a", time.Minute)
		if err := ls.Renew(ctx(t), "k", "a", a.Token, time.Minute); err != nil {
			t.Fatal(err)
		}
		if _, ok, _ := again(t, ls).Acquire(ctx(t), "k", "b", time.Minute); ok {
			t.Fatal("another holder took a renewed lease")
		}
	})
	t.Run("ConcurrentAcquiresOfOneKeyLetExactlyOneThrough", func(t *testing.T) {
		ls := h.Open(t)
		var wg sync.WaitGroup
		var mu sync.Mutex
		won := 0
		for i := range 50 {
			wg.Go(func() {
				on := ls
				if i%2 == 1 {
					on = again(t, ls)
				}
				_, ok, err := on.Acquire(ctx(t), "k", fmt.Sprintf("h%d", i), time.Minute)
				if err != nil {
					t.Error(err)
				}
				if ok {
					mu.Lock()
					won++
					mu.Unlock()
				}
			})
		}
		wg.Wait()
		if won != 1 {
			t.Fatalf("%d of 50 concurrent Acquires got the lease, want 1", won)
		}
	})
	t.Run("TokensOnlyGrow", func(t *testing.T) {
		ls := h.Open(t)
		last := int64(0)
		for i := range 20 {
			l := acquire(t, ls, "k", fmt.Sprintf("h%d", i%3), time.Minute)
			if l.Token <= last {
				t.Fatalf("acquisition %d gave token %d after %d", i, l.Token, last)
			}
			last = l.Token
			if err := ls.Release(ctx(t), "k", l.Holder, l.Token); err != nil {
				t.Fatal(err)
			}
		}
	})
	t.Run("AnAcquireWhileTheHolderLetsGoNeverFails", func(t *testing.T) {
		// An Acquire that loses to a live holder reads who holds the
		// lease; the holder letting go at that moment is no error.
		ls := h.Open(t)
		other := again(t, ls)
		for i := range 100 {
			a := acquire(t, ls, "k", "a", time.Minute)
			var wg sync.WaitGroup
			wg.Go(func() {
				if err := ls.Release(ctx(t), "k", "a", a.Token); err != nil {
					t.Error(err)
				}
			})
			b, ok, err := other.Acquire(ctx(t), "k", "b", time.Minute)
			wg.Wait()
			if err != nil {
				t.Fatalf("round %d: an Acquire while the holder let go: %v", i, err)
			}
			if ok {
				if err := other.Release(ctx(t), "k", "b", b.Token); err != nil {
					t.Fatal(err)
				}
			}
		}
	})
	t.Run("TokensGrowAcrossKeys", func(t *testing.T) {
		// One sequence for every key: what lets a pruned key start again
		// above every token it had.
		ls := h.Open(t)
		a := acquire(t, ls, "k1", "a", time.Minute)
		b := acquire(t, again(t, ls), "k2", "a", time.Minute)
		if b.Token <= a.Token {
			t.Fatalf("the second key's token %d is not greater than the first's %d", b.Token, a.Token)
		}
	})
	t.Run("APrunedKeyAcquiredAgainGetsAGreaterToken", func(t *testing.T) {
		ls := h.Open(t)
		var last int64
		for i := range 3 {
			l := acquire(t, ls, "k", "a", time.Minute)
			if l.Token <= last {
				t.Fatalf("acquisition %d after a prune gave token %d after %d", i, l.Token, last)
			}
			last = l.Token
			if err := ls.Release(ctx(t), "k", "a", l.Token); err != nil {
				t.Fatal(err)
			}
			if n := prune(t, again(t, ls), time.Hour); n != 1 {
				t.Fatalf("Prune of a released lease pruned %d, want 1", n)
			}
		}
	})
	t.Run("AWriteFencedWithAPrunedLeasesTokenIsRefused", func(t *testing.T) {
		ls := h.Open(t)
		a := acquire(t, ls, "k", "a", short)
		f := lease.Fence{Key: "k", Token: a.Token}
		if !h.Holds(t, ls, f) {
			t.Fatal("a write fenced with a live lease is refused")
		}
		waitExpired(t, ls)
		if n := prune(t, ls, 0); n != 1 {
			t.Fatalf("Prune of an expired lease pruned %d, want 1", n)
		}
		if h.Holds(t, again(t, ls), f) {
			t.Fatal("a write fenced with a pruned lease's token would go in")
		}
		if err := ls.Renew(ctx(t), "k", "a", a.Token, time.Minute); !errors.Is(err, lease.ErrLost) {
			t.Fatalf("the pruned lease's holder's Renew = %v, want ErrLost", err)
		}
		b := acquire(t, again(t, ls), "k", "b", time.Minute)
		if b.Token <= a.Token {
			t.Fatalf("the key acquired again after a prune got token %d, not greater than %d", b.Token, a.Token)
		}
		if h.Holds(t, ls, f) {
			t.Fatal("a write fenced with the pruned lease's token would go in once the key is held again")
		}
	})
	t.Run("ALiveLeaseIsNeverPruned", func(t *testing.T) {
		ls := h.Open(t)
		live := acquire(t, ls, "live", "a", time.Minute)
		acquire(t, ls, "ended", "a", short)
		waitExpired(t, ls)
		if n := prune(t, again(t, ls), 0); n != 1 {
			t.Fatalf("Prune pruned %d leases, want the expired one alone", n)
		}
		if !h.Holds(t, ls, lease.Fence{Key: "live", Token: live.Token}) {
			t.Fatal("the live lease was pruned")
		}
		if err := ls.Renew(ctx(t), "live", "a", live.Token, time.Minute); err != nil {
			t.Fatalf("the live lease's Renew after a prune: %v", err)
		}
		if _, ok, _ := again(t, ls).Acquire(ctx(t), "live", "b", time.Minute); ok {
			t.Fatal("another holder took the live lease after a prune")
		}
	})
	t.Run("ALeaseExpiredWithinTheGraceIsKept", func(t *testing.T) {
		ls := h.Open(t)
		a := acquire(t, ls, "k", "a", short)
		waitExpired(t, ls)
		if n := prune(t, ls, time.Hour); n != 0 {
			t.Fatalf("Prune with an hour's grace pruned %d, want none", n)
		}
		if !h.Holds(t, ls, lease.Fence{Key: "k", Token: a.Token}) {
			t.Fatal("a lease expired within the grace was pruned")
		}
	})
	t.Run("ANegativeGraceIsRefused", func(t *testing.T) {
		if _, err := h.Open(t).Prune(ctx(t), -time.Second); err == nil {
			t.Fatal("Prune with a negative grace was taken")
		}
	})
	t.Run("KeysAreLeasedApart", func(t *testing.T) {
		ls := h.Open(t)
		acquire(t, ls, "k1", "a", time.Minute)
		acquire(t, ls, "k2", "b", time.Minute)
	})
	t.Run("BadArgumentsAreRefused", func(t *testing.T) {
		ls := h.Open(t)
		for _, c := range []struct {
			key, holder string
			ttl         time.Duration
		}{{"", "a", time.Second}, {"k", "", time.Second}, {"k", "a", 0}} {
			if _, ok, err := ls.Acquire(ctx(t), c.key, c.holder, c.ttl); err == nil || ok {
				t.Errorf("Acquire(%q, %q, %v) = %v, %v", c.key, c.holder, c.ttl, ok, err)
			}
		}
	})
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(t.Context(), Wait)
	t.Cleanup(cancel)
	return c
}

func acquire(t *testing.T, ls lease.Leases, key, holder string, ttl time.Duration) lease.Lease {
	t.Helper()
	l, ok, err := ls.Acquire(ctx(t), key, holder, ttl)
	if err != nil || !ok {
		t.Fatalf("Acquire %s for %s: %+v, %v, %v", key, holder, l, ok, err)
	}
	return l
}

func prune(t *testing.T, ls lease.Leases, grace time.Duration) int {
	t.Helper()
	n, err := ls.Prune(ctx(t), grace)
	if err != nil {
		t.Fatalf("Prune: %v", err)
	}
	return n
}

// waitExpired returns once the leases of the suite's short time to live
// acquired on ls before it was called have expired, on the storage's
// clock: it acquires a clock key for as long, then waits until another
// holder takes it over, which then holds it for a minute.
func waitExpired(t *testing.T, ls lease.Leases) {
	t.Helper()
	acquire(t, ls, "leasetest clock", "tick", short)
	acquireWithin(t, ls, "leasetest clock", "tock")
}

// acquireWithin acquires key for holder once the lease there expires,
// polling until Wait.
func acquireWithin(t *testing.T, ls lease.Leases, key, holder string) lease.Lease {
	t.Helper()
	deadline := time.Now().Add(Wait)
	for {
		l, ok, err := ls.Acquire(ctx(t), key, holder, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			return l
		}
		if time.Now().After(deadline) {
			t.Fatalf("the lease of %s did not expire within %v: %+v", key, Wait, l)
		}
		time.Sleep(short / 5)
	}
}
