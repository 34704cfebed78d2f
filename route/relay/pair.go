package relay

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/agenthost/bots/route"
)

// PairTTL is how long a pairing code works.
const PairTTL = 10 * time.Minute

// pending is a code given to a network identity no person has yet.
type pending struct {
	Identity string    `json:"identity"`
	Expires  time.Time `json:"expires"`
}

// codeAlphabet leaves out what reads alike (0 and O, 1 and I and L).
const codeAlphabet = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"

func newCode() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = codeAlphabet[int(b[i])%len(codeAlphabet)]
	}
	return string(b[:4]) + "-" + string(b[4:])
}

// decodeMap reads a map value of the memory; an empty map for none or
// for one that does not decode (the next write replaces it).
func decodeMap[V any](data []byte) map[string]V {
	m := map[string]V{}
	if data != nil {
		_ = json.Unmarshal(data, &m)
	}
	if m == nil {
		m = map[string]V{}
	}
	return m
}

// code answers the code waiting for identity, making one when none is
// valid now.
func (r *Relay) code(ctx context.Context, identity string) (string, error) {
	var code string
	err := r.mem.Update(ctx, codesKey, func(old []byte) ([]byte, error) {
		codes := decodeMap[pending](old)
		now := time.Now()
		code = ""
		for c, p := range codes {
			switch {
			case now.After(p.Expires):
				delete(codes, c)
			case p.Identity == identity:
				code = c
			}
		}
		if code == "" {
			code = newCode()
			codes[code] = pending{Identity: identity, Expires: now.Add(PairTTL)}
		}
		return json.Marshal(codes)
	})
	return code, err
}

// Paired returns the id of the person the chat-network identity was
// paired with (irc:alice@irc.example.org → soft), if it was.
func (r *Relay) Paired(ctx context.Context, identity string) (string, bool) {
	return r.paired(ctx, identity)
}

// paired is the person identity was paired with, if any.
func (r *Relay) paired(ctx context.Context, identity string) (string, bool) {
	data, err := r.mem.Get(ctx, pairingsKey)
	if err != nil {
		r.log.Warn("relay: the pairings cannot be read", "err", err)
		return "", false
	}
	p, ok := decodeMap[string](data)[identity]
	return p, ok
}

// ErrNoPairing is Pair's error for a code no identity waits with.
var ErrNoPairing = errors.New("no chat-network user waits with that code: a code works for 10 minutes, and once")

// Pair makes the network identity that was given code the person's: from
// now on the routes pass on its messages as theirs, on every instance that
// shares the relay's Memory. It answers the identity. A code works once,
// within PairTTL.
func (r *Relay) Pair(person, code string) (string, error) {
	ctx := r.ctx
	code = strings.ToUpper(strings.TrimSpace(code))
	var identity string
	err := r.mem.Update(ctx, codesKey, func(old []byte) ([]byte, error) {
		codes := decodeMap[pending](old)
		p, ok := codes[code]
		if !ok || time.Now().After(p.Expires) {
			return nil, ErrNoPairing
		}
		identity = p.Identity
		delete(codes, code)
		return json.Marshal(codes)
	})
	if err != nil {
		return "", err
	}
	err = r.mem.Update(ctx, pairingsKey, func(old []byte) ([]byte, error) {
		pairs := decodeMap[string](old)
		pairs[identity] = person
		return json.Marshal(pairs)
	})
	if err != nil {
		return "", fmt.Errorf("the pairing could not be saved: %w", err)
	}
	r.log.Info("relay: a network identity was paired with a person", "identity", identity, "person", person)
	return identity, nil
}

// Pairings lists the identities paired with person, or with anyone when
// person is "", ordered by identity.
func (r *Relay) Pairings(ctx context.Context, person string) ([]route.Pairing, error) {
	data, err := r.mem.Get(ctx, pairingsKey)
	if err != nil {
		return nil, fmt.Errorf("the pairings could not be read: %w", err)
	}
	out := []route.Pairing{}
	for identity, p := range decodeMap[string](data) {
		if person == "" || p == person {
			out = append(out, route.Pairing{Identity: identity, Person: p})
		}
	}
	slices.SortFunc(out, func(a, b route.Pairing) int { return strings.Compare(a.Identity, b.Identity) })
	return out, nil
}

// Unpair lets go of the pairing of identity with person (with anyone
// when person is ""): the routes no longer pass on its messages as
// theirs, and it is asked to pair again. Its chats stay the person's. An
// identity not paired with person answers route.ErrNotPaired.
func (r *Relay) Unpair(ctx context.Context, person, identity string) error {
	err := r.mem.Update(ctx, pairingsKey, func(old []byte) ([]byte, error) {
		pairs := decodeMap[string](old)
		if p, ok := pairs[identity]; !ok || (person != "" && p != person) {
			return nil, route.ErrNotPaired
		}
		delete(pairs, identity)
		return json.Marshal(pairs)
	})
	if err != nil {
		return err
	}
	r.log.Info("relay: a network identity's pairing was let go", "identity", identity, "person", person)
	return nil
}
