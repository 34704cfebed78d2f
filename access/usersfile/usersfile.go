// Package usersfile is the users-file adapter of access: it reads a JSON
// file of tokens, grants and memberships, authenticates tokens to
// access.Principal values, and watches the file for changes (Directory).
package usersfile

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/agenthost/bots/access"
	"github.com/agenthost/bots/internal/jsonerr"
)

// The users file, as written:
//
//	{ "root": { "token": "…" },
//	  "users": [ { "id": "soft", "token": "…", "grants": ["bot:*", "session:create"],
//	               "memberships": ["backend", "shop:website"] } ] }
//
// Both keys are optional; a key the file does not know is an error.
type usersFile struct {
	Root  *rootEntry  `json:"root"`
	Users []userEntry `json:"users"`
}

type rootEntry struct {
	Token string `json:"token"`
}

type userEntry struct {
	ID          string   `json:"id"`
	Token       string   `json:"token"`
	Grants      []string `json:"grants"`
	Memberships []string `json:"memberships"`
	Identities  []string `json:"identities"`
}

// User is one person of a users file, without their token.
type User struct {
	ID          string
	Grants      []string
	Memberships []string
	// Identities are who the person is on chat networks, as
	// "<network>:<id>" (irc:alice, xmpp:alice@example.org, slack:U123,
	// telegram:123456): a message a route receives from one is the
	// person's.
	Identities []string
}

type userRecord struct {
	User
	hash [sha256.Size]byte
}

// Users is a parsed users file: the root token and the people who may
// connect. It is immutable and safe for concurrent use. Tokens are kept only
// as SHA-256 digests.
type Users struct {
	root       *[sha256.Size]byte
	users      []userRecord
	byID       map[string]int
	identities map[string]string // "<network>:<id>", in lower case → user id
}

// Load reads and parses the users file at path. Its errors name the
// file and, for a bad entry, the entry.
func Load(path string) (*Users, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("users file: %w", err)
	}
	u, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("users file %s: %w", path, err)
	}
	return u, nil
}

// MinTokenLen is the fewest characters a token of a users file may have: a
// shorter one is a password anybody who can reach the server may guess.
const MinTokenLen = 16

// checkToken refuses a token shorter than MinTokenLen, in words that
// never show it.
func checkToken(token string) error {
	if utf8.RuneCountInString(token) < MinTokenLen {
		return fmt.Errorf("the token is shorter than %d characters, and a short token can be guessed: give a long random one (openssl rand -hex 32)", MinTokenLen)
	}
	return nil
}

// Parse parses the JSON of a users file. It refuses unknown keys, an
// empty token or one shorter than MinTokenLen, a user without an id, and
// a duplicate id or token.
func Parse(data []byte) (*Users, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f usersFile
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("not a users file: %w", jsonerr.Locate(data, err))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("not a users file: text after the JSON object")
	}
	u := &Users{byID: make(map[string]int, len(f.Users)), identities: map[string]string{}}
	// who holds each token digest, for naming a duplicate.
	holders := make(map[[sha256.Size]byte]string)
	if f.Root != nil {
		if f.Root.Token == "" {
			return nil, errors.New("root: empty token")
		}
		if err := checkToken(f.Root.Token); err != nil {
			return nil, fmt.Errorf("root: %w", err)
		}
		h := sha256.Sum256([]byte(f.Root.Token))
		u.root = &h
		holders[h] = "root"
	}
	for i, e := range f.Users {
		where := fmt.Sprintf("users[%d]", i)
		if e.ID == "" {
			return nil, fmt.Errorf("%s: no id", where)
		}
		if strings.ContainsAny(e.ID, ": \t\r\n") {
			return nil, fmt.Errorf("%s: id %q holds a colon or a space", where, e.ID)
		}
		where = fmt.Sprintf("users[%d] (%q)", i, e.ID)
		if j, dup := u.byID[e.ID]; dup {
			return nil, fmt.Errorf("%s: duplicate id, as users[%d]", where, j)
		}
		if e.Token == "" {
			return nil, fmt.Errorf("%s: empty token", where)
		}
		if err := checkToken(e.Token); err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		h := sha256.Sum256([]byte(e.Token))
		if other, dup := holders[h]; dup {
			return nil, fmt.Errorf("%s: duplicate token, the same as %s's", where, other)
		}
		holders[h] = fmt.Sprintf("%q", e.ID)
		for _, g := range e.Grants {
			if s, op, ok := strings.Cut(g, ":"); !ok || s == "" || op == "" {
				return nil, fmt.Errorf("%s: grant %q is not <scheme>:<operation>", where, g)
			}
		}
		for _, m := range e.Memberships {
			if strings.TrimSpace(m) == "" {
				return nil, fmt.Errorf("%s: empty membership", where)
			}
		}
		for _, id := range e.Identities {
			if err := checkIdentity(id); err != nil {
				return nil, fmt.Errorf("%s: %w", where, err)
			}
			if other, dup := u.identities[strings.ToLower(id)]; dup {
				return nil, fmt.Errorf("%s: the identity %q is %q's already: one identity is one person", where, id, other)
			}
			u.identities[strings.ToLower(id)] = e.ID
		}
		u.byID[e.ID] = len(u.users)
		u.users = append(u.users, userRecord{
			User: User{ID: e.ID, Grants: slices.Clone(e.Grants), Memberships: slices.Clone(e.Memberships), Identities: slices.Clone(e.Identities)},
			hash: h,
		})
	}
	return u, nil
}

// checkIdentity refuses what is no "<network>:<id>": a network of
// lowercase letters, and an id without spaces or control characters.
func checkIdentity(id string) error {
	network, rest, ok := strings.Cut(id, ":")
	valid := ok && network != "" && rest != "" && strings.IndexFunc(network, func(r rune) bool { return r < 'a' || r > 'z' }) < 0 &&
		strings.IndexFunc(rest, func(r rune) bool { return r <= ' ' || r == 0x7f }) < 0
	if !valid {
		return fmt.Errorf("the identity %q is no <network>:<id> (irc:alice, xmpp:alice@example.org, slack:U123, telegram:123456)", id)
	}
	return nil
}

// Person returns the id of the person whose identities hold identity
// ("irc:alice", whatever the case of either), and false when nobody's do:
// the users file as a route.People.
func (u *Users) Person(identity string) (string, bool) {
	if u == nil {
		return "", false
	}
	id, ok := u.identities[strings.ToLower(identity)]
	return id, ok
}

// Identities returns every identity the file maps, as it writes it, with
// its person's id: the users file as a route.Identities.
func (u *Users) Identities() map[string]string {
	out := map[string]string{}
	if u == nil {
		return out
	}
	for _, r := range u.users {
		for _, id := range r.Identities {
			out[id] = r.ID
		}
	}
	return out
}

// Authenticate returns the principal whose token this is: the root
// principal for the root token, the user's for a user's token. ok is false
// for an empty or unknown token. The comparison takes the same time whoever
// holds the token, or nobody.
func (u *Users) Authenticate(token string) (p access.Principal, ok bool) {
	if u == nil || token == "" {
		return access.Principal{}, false
	}
	h := sha256.Sum256([]byte(token))
	rootHit := 0
	if u.root != nil {
		rootHit = subtle.ConstantTimeCompare(h[:], u.root[:])
	}
	found := -1
	for i := range u.users {
		eq := subtle.ConstantTimeCompare(h[:], u.users[i].hash[:])
		found = subtle.ConstantTimeSelect(eq, i, found)
	}
	switch {
	case rootHit == 1:
		return access.RootPrincipal(), true
	case found >= 0:
		return u.users[found].principal(), true
	}
	return access.Principal{}, false
}

// Principal returns the principal of the user with the id, as the file
// says now. Asked on every request, it makes no copy: its Grants and
// Memberships are the file's own, to be read and never changed (an append
// copies them).
func (u *Users) Principal(id string) (access.Principal, bool) {
	if u == nil {
		return access.Principal{}, false
	}
	i, ok := u.byID[id]
	if !ok {
		return access.Principal{}, false
	}
	r := &u.users[i]
	return access.Principal{User: r.ID, Grants: slices.Clip(r.Grants), Memberships: slices.Clip(r.Memberships)}, true
}

// Users returns the people of the file, in its order, without tokens.
func (u *Users) Users() []User {
	if u == nil {
		return nil
	}
	out := make([]User, len(u.users))
	for i, r := range u.users {
		out[i] = User{ID: r.ID, Grants: slices.Clone(r.Grants), Memberships: slices.Clone(r.Memberships), Identities: slices.Clone(r.Identities)}
	}
	return out
}

func (r userRecord) principal() access.Principal {
	return access.Principal{User: r.ID, Grants: slices.Clone(r.Grants), Memberships: slices.Clone(r.Memberships)}
}

// Changed returns the ids of the people added, removed, or whose grants
// or memberships differ between prev and next, sorted. A token change alone
// is not a change of what anyone may do, so it is not listed. Either may be
// nil, meaning nobody.
func Changed(prev, next *Users) []string {
	var ids []string
	seen := map[string]bool{}
	for _, u := range []*Users{prev, next} {
		if u == nil {
			continue
		}
		for _, r := range u.users {
			if seen[r.ID] {
				continue
			}
			seen[r.ID] = true
			a, aok := prev.Principal(r.ID)
			b, bok := next.Principal(r.ID)
			if aok != bok || !slices.Equal(a.Grants, b.Grants) || !slices.Equal(a.Memberships, b.Memberships) {
				ids = append(ids, r.ID)
			}
		}
	}
	slices.Sort(ids)
	return ids
}

// DirectoryConfig configures a Directory.
type DirectoryConfig struct {
	// Path is the users file. Required.
	Path string
	// Interval is how often the file is read again to see whether it
	// changed. Zero means two seconds; a negative interval never polls, and
	// only Reload reads the file again.
	Interval time.Duration
	// Logger hears about a file that stopped parsing. Nil discards.
	Logger *slog.Logger
}

// Directory is the users file kept current: it re-reads the file when its
// content changes, tells subscribers, and keeps the last good users when
// the file stops parsing (with a Warn naming the file and the reason).
//
// Its methods are safe for concurrent use.
type Directory struct {
	path     string
	interval time.Duration
	log      *slog.Logger

	users atomic.Pointer[Users]

	reloadMu sync.Mutex        // serialises reloads and the notifications they make; guards below
	goodHash [sha256.Size]byte // content of the users in use
	badHash  [sha256.Size]byte // content that last failed to parse
	badErr   error
	lastErr  string // the last reason logged, so each is logged once

	subMu   sync.Mutex
	nextSub int
	subs    map[int]func(prev, next *Users)

	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

// OpenDirectory loads the users file, which must parse, and starts watching
// it. Close stops the watching.
func OpenDirectory(cfg DirectoryConfig) (*Directory, error) {
	if cfg.Path == "" {
		return nil, errors.New("users directory: no path")
	}
	if cfg.Interval == 0 {
		cfg.Interval = 2 * time.Second
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	data, err := os.ReadFile(cfg.Path)
	if err != nil {
		return nil, fmt.Errorf("users file: %w", err)
	}
	u, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("users file %s: %w", cfg.Path, err)
	}
	d := &Directory{
		path:     cfg.Path,
		interval: cfg.Interval,
		log:      log,
		goodHash: sha256.Sum256(data),
		subs:     map[int]func(prev, next *Users){},
		stop:     make(chan struct{}),
		done:     make(chan struct{}),
	}
	d.users.Store(u)
	if d.interval > 0 {
		go d.poll()
	} else {
		close(d.done)
	}
	return d, nil
}

// Path returns the users file the directory reads.
func (d *Directory) Path() string { return d.path }

// Users returns the users as the file last said them well.
func (d *Directory) Users() *Users { return d.users.Load() }

// Authenticate is Users().Authenticate.
func (d *Directory) Authenticate(token string) (access.Principal, bool) {
	return d.Users().Authenticate(token)
}

// Principal is Users().Principal.
func (d *Directory) Principal(id string) (access.Principal, bool) {
	return d.Users().Principal(id)
}

// Person is Users().Person: who an identity is, as the file says now.
func (d *Directory) Person(identity string) (string, bool) {
	return d.Users().Person(identity)
}

// Identities is Users().Identities.
func (d *Directory) Identities() map[string]string { return d.Users().Identities() }

// Subscribe calls fn after each change of the users, with the users before
// and after; Changed says whose grants or memberships changed. Calls
// are made one at a time, in order, from the goroutine that reloaded; fn
// must not block for long nor call Reload. The returned function ends the
// subscription.
func (d *Directory) Subscribe(fn func(prev, next *Users)) (cancel func()) {
	d.subMu.Lock()
	id := d.nextSub
	d.nextSub++
	d.subs[id] = fn
	d.subMu.Unlock()
	return func() {
		d.subMu.Lock()
		delete(d.subs, id)
		d.subMu.Unlock()
	}
}

var _ access.Watcher = (*Directory)(nil)

// WatchUsers is Subscribe as access.Watcher: fn hears Changed of each
// change.
func (d *Directory) WatchUsers(fn func(changed []string)) (cancel func()) {
	return d.Subscribe(func(prev, next *Users) { fn(Changed(prev, next)) })
}

// Reload reads the file now. It reports whether the users changed. A file
// that cannot be read or does not parse keeps the last good users: the
// error is returned and logged at Warn once per distinct content.
func (d *Directory) Reload(ctx context.Context) (changed bool, err error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	d.reloadMu.Lock()
	defer d.reloadMu.Unlock()
	data, err := os.ReadFile(d.path)
	if err != nil {
		err = fmt.Errorf("users file: %w", err)
		d.warn(err)
		return false, err
	}
	h := sha256.Sum256(data)
	switch {
	case h == d.goodHash:
		d.badHash, d.badErr, d.lastErr = [sha256.Size]byte{}, nil, ""
		return false, nil
	case h == d.badHash:
		return false, d.badErr // said once already
	}
	next, err := Parse(data)
	if err != nil {
		err = fmt.Errorf("users file %s: %w", d.path, err)
		d.badHash, d.badErr = h, err
		d.warn(err)
		return false, err
	}
	d.goodHash, d.badHash, d.badErr = h, [sha256.Size]byte{}, nil
	d.lastErr = ""
	prev := d.users.Swap(next)
	d.subMu.Lock()
	fns := make([]func(prev, next *Users), 0, len(d.subs))
	ids := make([]int, 0, len(d.subs))
	for id := range d.subs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		fns = append(fns, d.subs[id])
	}
	d.subMu.Unlock()
	for _, fn := range fns {
		fn(prev, next)
	}
	return true, nil
}

// warn logs a reload failure once per distinct reason. Called with
// reloadMu held.
func (d *Directory) warn(err error) {
	if err.Error() == d.lastErr {
		return
	}
	d.lastErr = err.Error()
	d.log.Warn("users file not reloaded; keeping the last good users", "path", d.path, "reason", err.Error())
}

func (d *Directory) poll() {
	defer close(d.done)
	t := time.NewTicker(d.interval)
	defer t.Stop()
	ctx := context.Background()
	for {
		select {
		case <-d.stop:
			return
		case <-t.C:
			_, _ = d.Reload(ctx) // failures are logged by Reload
		}
	}
}

// Close stops watching the file. It is idempotent; the directory still
// answers with the last users it read.
func (d *Directory) Close() error {
	d.closeOnce.Do(func() { close(d.stop) })
	<-d.done
	return nil
}
