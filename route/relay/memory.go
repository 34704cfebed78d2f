package relay

import "context"

// Memory keeps what the relay remembers across restarts, and across the
// instances that share it, as whole values by key: each connection's
// chats and the message ids it passed on, the pairings people confirmed,
// and the pairing codes that wait. Its methods are safe for concurrent
// use. It is kept in memory (memroute.Memory), in files
// (fileroute.Memory) or in PostgreSQL (pgroute.Memory); routetest.RunMemory
// is its conformance suite.
type Memory interface {
	// Get returns the value of key, nil when there is none.
	Get(ctx context.Context, key string) ([]byte, error)
	// Update replaces the value of key by what f makes of it (nil when
	// there is none), atomically against every other Update of key, by
	// this instance or another sharing the memory. f may be called more
	// than once; its error ends the update, which then writes nothing.
	Update(ctx context.Context, key string, f func(old []byte) ([]byte, error)) error
}

// The keys of a Memory.
const (
	pairingsKey = "pairings" // identity → person
	codesKey    = "codes"    // pairing code → the identity it was given to, and until when
)

// connKey is the key of a connection's memo.
func connKey(id string) string { return "conn/" + id }
