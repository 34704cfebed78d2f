// Package lease is the port of leases with fencing tokens: which instance
// may run the back session of a (bot, person, name) when several share a
// database. A holder acquires a key for a time to live and renews it; when
// it stops (it died, or lost its connection) the lease expires and another
// holder may take it over. Every acquisition that is not a renewal gives a
// greater token, so a write made for a key carries its holder's token
// (WithFence) and a store that checks it refuses the write of a holder
// whose lease was taken over (ErrFenced).
//
// Tokens are drawn from one sequence for every key, so a lease that ended
// may be pruned (Prune): the key acquired again still gets a token greater
// than any it had, and a write fenced with the pruned lease's token is
// refused, as after a takeover.
//
// Mem keeps leases in memory; lease/pglease keeps them in PostgreSQL;
// lease/leasetest is the conformance suite both pass.
package lease

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrLost is what Renew answers when the holder no longer holds the lease
// with its token: another took it over, or it was released.
var ErrLost = errors.New("lease: the lease is no longer held with this token")

// ErrFenced is what a store answers for a write whose fence (WithFence)
// is no longer the key's lease: another holder took it over.
var ErrFenced = errors.New("lease: the write is refused: its lease was taken over by another holder")

// DefaultTTL is the time to live of a lease a holder does not name one
// for; holders renew every TTL/3, so an instance that dies is taken over
// within TTL plus the poll of a waiting one.
const DefaultTTL = 10 * time.Second

// MinTTL is the shortest time to live CheckTTL lets a holder configure:
// below it a renewal every TTL/3 is too close to a database's round trip
// under load, and live leases would expire.
const MinTTL = 500 * time.Millisecond

// CheckTTL refuses, in one sentence, a configured time to live that is
// negative or under MinTTL; zero (DefaultTTL) is accepted.
func CheckTTL(ttl time.Duration) error {
	if ttl != 0 && ttl < MinTTL {
		return fmt.Errorf("a lease time to live of %v is refused: it must be at least %v (zero is the default, %v)", ttl, MinTTL, DefaultTTL)
	}
	return nil
}

// PruneGrace is how long after it expired a lease its holder did not
// release is kept by the owners' periodic Prune: a holder that stalled
// (a pause longer than the time to live) may still renew it meanwhile
// when no one took it over.
const PruneGrace = time.Minute

// PruneEvery is how often the owner of leases (bots.Server on a database)
// prunes them.
const PruneEvery = time.Minute

// Lease is a key's lease as an Acquire saw it.
type Lease struct {
	// Key names what is leased.
	Key string
	// Holder is who holds it.
	Holder string
	// Token is its fencing token: it grows with every acquisition that is
	// not a renewal, and only grows.
	Token int64
	// Expires is when it ends unless renewed.
	Expires time.Time
}

// Leases keeps leases. Its methods may be called concurrently, from many
// instances on one storage.
type Leases interface {
	// Acquire takes key for holder for ttl when no one holds it, its lease
	// expired or was released, or holder holds it already (a renewal: the
	// token stays). Otherwise ok is false and l is the lease that holds
	// the key. A taking over gives a token greater than any before.
	Acquire(ctx context.Context, key, holder string, ttl time.Duration) (l Lease, ok bool, err error)
	// Renew extends holder's lease of key with token by ttl from now. A
	// lease no longer held with token is ErrLost.
	Renew(ctx context.Context, key, holder string, token int64, ttl time.Duration) error
	// Release ends holder's lease of key with token, so that another may
	// take it at once; one no longer held is no error. The token is kept:
	// the next holder's is greater.
	Release(ctx context.Context, key, holder string, token int64) error
	// Prune deletes the leases that were released, or expired more than
	// grace ago, and reports how many; a live lease, and one expired
	// within grace, is kept. A key acquired again after its lease was
	// pruned gets a token greater than any it had, a write fenced with
	// the pruned lease's token is refused, and the pruned lease's holder
	// cannot renew it (ErrLost). A negative grace is an error.
	Prune(ctx context.Context, grace time.Duration) (int, error)
}

// Fence is a key's lease token a write carries.
type Fence struct {
	// Key is the leased key.
	Key string
	// Token is the writer's token.
	Token int64
}

type fenceKey struct{}

// WithFence returns ctx carrying f: a store that checks fences refuses a
// write made with it once the key's lease has another token.
func WithFence(ctx context.Context, f Fence) context.Context {
	return context.WithValue(ctx, fenceKey{}, f)
}

// FenceFrom returns the fence ctx carries.
func FenceFrom(ctx context.Context) (Fence, bool) {
	f, ok := ctx.Value(fenceKey{}).(Fence)
	return f, ok
}

// CheckArgs refuses, in one sentence, what no Leases takes: an empty key
// or holder, or a time to live that is not positive. Implementations call
// it first.
func CheckArgs(key, holder string, ttl time.Duration) error {
	switch {
	case key == "":
		return errors.New("lease: an empty key")
	case holder == "":
		return errors.New("lease: an empty holder")
	case ttl <= 0:
		return errors.New("lease: a time to live must be positive")
	}
	return nil
}

// CheckGrace refuses, in one sentence, a negative grace of Prune.
func CheckGrace(grace time.Duration) error {
	if grace < 0 {
		return fmt.Errorf("lease: a prune's grace of %v is negative", grace)
	}
	return nil
}
