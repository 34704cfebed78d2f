package relay

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/agenthost/bots/internal/atomicfile"
)

// PairTTL is how long a pairing code works.
const PairTTL = 10 * time.Minute

// pairsFile is where the pairings a person confirmed are kept, in the
// relay's State folder.
const pairsFile = "pairings.json"

// pending is a code given to a network identity no person has yet.
type pending struct {
	identity string
	expires  time.Time
}

// pairs is the pairings: identities people confirmed as theirs, and the
// codes waiting to be confirmed. Guarded by Relay.mu.
type pairs struct {
	Confirmed map[string]string `json:"confirmed"` // identity → person
	codes     map[string]pending
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

// loadPairs reads the confirmed pairings; none when dir is "" or there are
// none yet.
func loadPairs(dir string) (*pairs, error) {
	p := &pairs{Confirmed: map[string]string{}, codes: map[string]pending{}}
	if dir == "" {
		return p, nil
	}
	data, err := os.ReadFile(filepath.Join(dir, pairsFile))
	if errors.Is(err, fs.ErrNotExist) {
		return p, nil
	}
	if err == nil {
		err = json.Unmarshal(data, p)
	}
	if err != nil {
		return &pairs{Confirmed: map[string]string{}, codes: map[string]pending{}}, fmt.Errorf("cannot read %s: %w", filepath.Join(dir, pairsFile), err)
	}
	if p.Confirmed == nil {
		p.Confirmed = map[string]string{}
	}
	p.codes = map[string]pending{}
	return p, nil
}

func (p *pairs) save(dir string) error {
	if dir == "" {
		return nil
	}
	data, err := json.Marshal(p)
	if err != nil {
		return err
	}
	if err := atomicfile.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return atomicfile.Write(filepath.Join(dir, pairsFile), data, 0o600)
}

// code answers the code waiting for identity, making one when none is
// valid now.
func (r *Relay) code(identity string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	for c, p := range r.pairs.codes {
		if now.After(p.expires) {
			delete(r.pairs.codes, c)
			continue
		}
		if p.identity == identity {
			return c
		}
	}
	c := newCode()
	r.pairs.codes[c] = pending{identity: identity, expires: now.Add(PairTTL)}
	return c
}

// paired is the person identity was paired with, if any.
func (r *Relay) paired(identity string) (string, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p, ok := r.pairs.Confirmed[identity]
	return p, ok
}

// ErrNoPairing is Pair's error for a code no identity waits with.
var ErrNoPairing = errors.New("no chat-network user waits with that code: a code works for 10 minutes, and once")

// Pair makes the network identity that was given code the person's: from
// now on the routes pass on its messages as theirs. It answers the
// identity. A code works once, within PairTTL.
func (r *Relay) Pair(person, code string) (string, error) {
	code = strings.ToUpper(strings.TrimSpace(code))
	r.mu.Lock()
	defer r.mu.Unlock()
	p, ok := r.pairs.codes[code]
	if !ok || time.Now().After(p.expires) {
		return "", ErrNoPairing
	}
	delete(r.pairs.codes, code)
	r.pairs.Confirmed[p.identity] = person
	if err := r.pairs.save(r.cfg.State); err != nil {
		delete(r.pairs.Confirmed, p.identity)
		return "", fmt.Errorf("the pairing could not be saved: %w", err)
	}
	r.log.Info("relay: a network identity was paired with a person", "identity", p.identity, "person", person)
	return p.identity, nil
}
