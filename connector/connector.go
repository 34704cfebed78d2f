// Package connector resolves a bot's connectors: the Vault port that gives a
// connector's credential at call time, the Adapter port that makes a call
// with it, a Registry of adapters by name, a Scrubber that keeps credential
// values out of anything returned or logged, Permits, which says who may
// use a credential by its vault entry's owners, and Tools, which offers a
// bot's live connectors map as one tool per alias and calls one only for a
// bot owner and a person who may both use it.
//
// A connector is named in a bot's record as connectors://<adapter>/<id>
// under an alias; the record never holds the credential. The host registers
// adapters and gives a Vault; both are asked on every call, so an edit of
// the map or of the vault reaches a session that is already running.
package connector

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/agenthost/bots/access"
	"github.com/agenthost/bots/record"
)

// Sentinel errors. Implementations wrap them with %w.
var (
	// ErrNoCredential means the vault holds no credential for the connector.
	ErrNoCredential = errors.New("no credential for the connector")
	// ErrNoAlias means the bot has no connector under the alias (any more).
	ErrNoAlias = errors.New("no such connector alias")
	// ErrNoAdapter means no adapter of the connector's name is registered.
	ErrNoAdapter = errors.New("no such connector adapter")
	// ErrDenied means the adapter refuses the person who sent the message.
	ErrDenied = errors.New("the connector refuses this person")
	// ErrVault means the vault could not be read or is refused (its file's
	// mode or place); the error says why without any value.
	ErrVault = errors.New("the vault is unusable")
)

// Redacted stands in for a credential value wherever one would be shown.
const Redacted = "[redacted]"

// Ref names one connector: connectors://<adapter>/<id>.
type Ref struct {
	Adapter string
	ID      string
}

// ParseRef parses connectors://<adapter>/<id>.
func ParseRef(s string) (Ref, error) {
	a, id, err := record.ParseConnector(s)
	if err != nil {
		return Ref{}, err
	}
	return Ref{Adapter: a, ID: id}, nil
}

// String is the reference as a record holds it.
func (r Ref) String() string { return "connectors://" + r.Adapter + "/" + r.ID }

// Credential is what a vault holds for one connector: a secret value, the
// header it is sent in, the endpoint it is for, and who may use it. Its
// value is never printed: String, Format, LogValue and MarshalJSON all
// redact it.
type Credential struct {
	// Header is the HTTP header the value is sent in; empty means the
	// adapter's default (Authorization for http).
	Header string
	// URL is the endpoint the credential is for, when the vault names one.
	URL string
	// Owners say who may use the credential: owner strings (user:<id>,
	// team:<name>, project:<name>, root:<host>) or "*" for everybody
	// signed in. None means root alone (see Permits).
	Owners []string

	value string
}

// NewCredential makes a credential holding value, for root alone until
// Owners is set.
func NewCredential(value, header, url string) Credential {
	return Credential{Header: header, URL: url, value: value}
}

// Value is the secret itself. Use it only to put it on the wire, and add it
// to a Scrubber first.
func (c Credential) Value() string { return c.value }

// IsZero reports whether c holds no value.
func (c Credential) IsZero() bool { return c.value == "" }

// String shows the credential without its value.
func (c Credential) String() string {
	return fmt.Sprintf("credential{header=%q url=%q owners=%q value=%s}", c.Header, c.URL, c.Owners, Redacted)
}

// GoString shows the credential without its value, for %#v.
func (c Credential) GoString() string { return c.String() }

// Format prints the credential without its value, whatever the verb.
func (c Credential) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(c.String())) }

// LogValue logs the credential without its value.
func (c Credential) LogValue() slog.Value {
	return slog.GroupValue(slog.String("header", c.Header), slog.String("url", c.URL),
		slog.String("owners", strings.Join(c.Owners, ",")), slog.String("value", Redacted))
}

// MarshalJSON encodes the credential without its value.
func (c Credential) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]any{"header": c.Header, "url": c.URL, "owners": c.Owners, "value": Redacted})
}

// Vault resolves a connector's credential at call time.
type Vault interface {
	// Resolve returns the credential of ref. It answers an error wrapping
	// ErrNoCredential when the vault holds none, and one wrapping ErrVault
	// when the vault cannot be used; no error holds a value. It is safe to
	// call concurrently, and is called on every connector call, so a change
	// to the vault reaches the next call.
	Resolve(ctx context.Context, ref Ref) (Credential, error)
}

// Lister is an optional interface of a Vault: every credential value it
// holds now, so that a Scrubber knows them before any is resolved (see
// Learn). An error holds no value.
type Lister interface {
	Values(ctx context.Context) ([]string, error)
}

// Learn teaches s every value v holds now, when v is a Lister; a vault that
// is not one teaches nothing.
func Learn(ctx context.Context, v Vault, s *Scrubber) error {
	l, ok := v.(Lister)
	if !ok {
		return nil
	}
	values, err := l.Values(ctx)
	s.Add(values...)
	return err
}

// Call is one call of a connector, as an adapter receives it. Tools calls
// an adapter only once both Owner and From may use the credential.
type Call struct {
	// Owner is the bot's owner, as the users file has them now.
	Owner access.Principal
	// From is the person who sent the message the back session is working
	// on, as the users file has them now; an adapter may refuse by their
	// rights (ErrDenied).
	From access.Principal
	// Bot is the id of the bot whose session calls.
	Bot string
	// Alias is the name the bot gives the connector, and the tool's name.
	Alias string
	// Ref is the connector.
	Ref Ref
	// Args are the tool's arguments, a JSON object (or empty).
	Args json.RawMessage
	// Credential is the connector's credential, resolved for this call.
	Credential Credential
}

// Result is what a connector call answers, to be handed to the agent.
type Result struct {
	// Text is the answer's body.
	Text string
	// ContentType is the answer's media type, when known.
	ContentType string
	// IsError reports that the far end answered with a failure (an HTTP
	// status of 400 or more); Text says what it answered.
	IsError bool
	// Truncated reports that the answer was cut at the adapter's limit.
	Truncated bool
}

// Adapter makes connector calls of one kind (http, …).
type Adapter interface {
	// Call makes one call with the credential the call carries. It answers
	// an error wrapping ErrDenied when it refuses call.From. Neither the
	// result nor the error may hold the credential's value. It is safe to
	// call concurrently.
	Call(ctx context.Context, call Call) (Result, error)
}

// Describer is an optional interface of an Adapter: what its tool for ref
// does, and the JSON Schema of the tool's arguments.
type Describer interface {
	Describe(ref Ref) (description string, inputSchema json.RawMessage)
}

// Registry holds the adapters a host offers, by name. The zero value is
// empty and ready; it is safe to use concurrently.
type Registry struct {
	mu       sync.RWMutex
	adapters map[string]Adapter
}

// Register adds the adapter under name, which is what a connector reference
// names: connectors://<name>/<id>. A name taken already or no adapter name
// is refused.
func (r *Registry) Register(name string, a Adapter) error {
	if _, err := ParseRef("connectors://" + name + "/x"); err != nil {
		return fmt.Errorf("adapter name %q is not a connector adapter name", name)
	}
	if a == nil {
		return fmt.Errorf("adapter %q is nil", name)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.adapters[name]; ok {
		return fmt.Errorf("adapter %q is registered already", name)
	}
	if r.adapters == nil {
		r.adapters = make(map[string]Adapter)
	}
	r.adapters[name] = a
	return nil
}

// Adapter returns the adapter registered under name.
func (r *Registry) Adapter(name string) (Adapter, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	a, ok := r.adapters[name]
	return a, ok
}

// Names lists the registered adapters' names, sorted.
func (r *Registry) Names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return slices.Sorted(maps.Keys(r.adapters))
}
