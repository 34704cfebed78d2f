package route

import (
	"context"
	"errors"
	"net"
	"strings"
	"time"
)

// Connection is one login to one network, kept by the host's operator. Its
// credentials are named by vault alias, never held: listing a connection
// shows nothing secret.
type Connection struct {
	// ID names the connection: ^[a-z][a-z0-9-]{0,39}$, like a slug.
	ID string `json:"id"`
	// Network is the adapter's Name: irc, xmpp, telegram, slack.
	Network string `json:"network"`
	// Enabled is false for a connection the operator turned off: no
	// route on it runs.
	Enabled bool `json:"enabled"`
	// Settings are the adapter's safe settings (server, nick, jid,
	// workspace…), shown to whoever may list connections.
	Settings map[string]string `json:"settings,omitempty"`
	// Secrets name the credentials the adapter needs by the adapter's
	// names (password, token, signingSecret…), each a vault reference
	// connectors://<adapter>/<id> resolved at dial time through the vault
	// connectors already use.
	Secrets map[string]string `json:"secrets,omitempty"`
}

// Identity is who user (an id as the network gives it: a nick, a JID, a
// user id) is on the connection, as users files and pairings name people:
// "<network>:<user>". An IRC nick is one server's, held by whoever its
// services give it (or by whoever takes it), so on IRC the identity names
// the connection's server too (irc:alice@irc.example.org): a pairing made
// there is that server's alone, and it is written in lower case, as IRC
// holds Alice and alice to be one nick. broad is the nick on any server
// (irc:alice), which a users file may name where the operator knows the
// nick is one person's on every server the host meets; it is "" on other
// networks. On an IRC connection whose setting accounts is "true" the
// user is the account its services say the sender is logged in as,
// written "account:<name>" (IRCAccount): irc:account:alice@irc.example.org
// is never a nick, which anyone may take while its holder is away.
func (c Connection) Identity(user string) (identity, broad string) {
	identity = c.Network + ":" + user
	if c.Network != "irc" {
		return identity, ""
	}
	identity = strings.ToLower(identity) // a nick in any case is one
	host, _, err := net.SplitHostPort(c.Settings["server"])
	if err != nil || host == "" {
		return identity, "" // no server: the connection does not dial
	}
	return identity + "@" + strings.ToLower(host), identity
}

// IRCAccount begins an IRC user that is an account its services logged
// the sender in as, not a nick (Identity): irc:account:alice.
const IRCAccount = "account:"

// Meets reports whether identity, as a users file names a person, is a
// user the connection can meet: one of its network, and on IRC the nick
// (with accounts, the account) on any server or on the connection's
// (Identity).
func (c Connection) Meets(identity string) bool {
	user, ok := strings.CutPrefix(identity, c.Network+":")
	if !ok {
		return false
	}
	if c.Network != "irc" {
		return true
	}
	if strings.HasPrefix(strings.ToLower(user), IRCAccount) != (c.Settings["accounts"] == "true") {
		return false // an account where senders are nicks, or a nick where they are accounts
	}
	nick, _, onOne := strings.Cut(user, "@")
	if !onOne {
		return true
	}
	exact, _ := c.Identity(nick)
	return strings.EqualFold(exact, identity)
}

// Pairing is a chat-network identity a person paired with themselves: a
// code given to the identity, entered by the person (package relay).
type Pairing struct {
	Identity string `json:"identity"` // as Connection.Identity names it
	Person   string `json:"person"`   // the users directory's id
}

// ErrNotPaired is what letting go of a pairing answers for an identity
// not paired with the person.
var ErrNotPaired = errors.New("that chat account is not paired with you")

// ViaMeta is the key of a user message's _meta that says where the person
// said it when not in the chat itself: a chat network and its scope, as
// the relay passes a message on ("irc:alice in #motion"). The back session
// reads it as the context block's via line; it is one line of at most 200
// characters, never an instruction.
const ViaMeta = "ahpd.via"

// RouteMeta is the key of a user message's _meta that names the route
// which passed it on: its turn runs in a back session of its own, whose
// tools the route narrows (host ∩ bot ∩ route).
const RouteMeta = "ahpd.route"

// Unmapped says what a route does with a message from a network user who
// maps to no person.
type Unmapped string

// The policies for unmapped users.
const (
	// Refuse answers them with one sentence in the network and goes no
	// further. The default.
	Refuse Unmapped = "refuse"
	// Pair answers them with a pairing code that a person confirms on the
	// page, which maps the network identity to that person.
	Pair Unmapped = "pair"
)

// Route sends the messages of one scope of a connection to one bot's main
// chat, as the person each network user maps to.
type Route struct {
	// ID names the route: ^[a-z][a-z0-9-]{0,39}$.
	ID string `json:"id"`
	// Name is how people see it.
	Name string `json:"name,omitempty"`
	// Enabled is false for a route that is kept but does not run.
	Enabled bool `json:"enabled"`
	// Connection is the Connection's ID.
	Connection string `json:"connection"`
	// Bot is the bot's slug.
	Bot string `json:"bot"`
	// Scope is what the route listens to: a direct message (ID empty:
	// any person's direct messages to the connection), one group, one
	// thread.
	Scope Scope `json:"scope"`
	// Unmapped is the policy for users who map to no person; empty means
	// Refuse.
	Unmapped Unmapped `json:"unmapped,omitempty"`
	// Tools, when not nil, narrows the bot's tools for turns the route
	// starts: the tools a turn gets are the host's ∩ Tools ∩ the bot's.
	// A route never widens them.
	Tools []string `json:"tools,omitempty"`
	// Owner is who made the route (an owner string, user:<id>…); people
	// who may edit the bot see and edit its routes.
	Owner string `json:"owner,omitempty"`
	// Version changes at every write; a write that names an older one is
	// refused (ErrConflict).
	Version string `json:"version,omitempty"`
}

// Errors of a Store, wrapped with a sentence naming the connection or
// route.
var (
	// ErrNotFound: no connection or route of that id.
	ErrNotFound = errors.New("not found")
	// ErrConflict: a write named a Version that is no longer the stored
	// one.
	ErrConflict = errors.New("changed since it was read")
)

// Store keeps connections and routes: in files by default, in PostgreSQL
// with -db. Every method is safe to call concurrently; a write is whole
// or not at all, and survives a crash once it returned.
type Store interface {
	// Connections lists every connection, ordered by ID.
	Connections(ctx context.Context) ([]Connection, error)
	// Routes lists every route, ordered by ID.
	Routes(ctx context.Context) ([]Route, error)
	// PutRoute saves r: a new one when no route has its ID (r.Version
	// empty), else a replacement of the route of that Version
	// (ErrConflict otherwise). A route Check refuses is refused with its
	// sentences. It returns the route as stored, with its new Version.
	PutRoute(ctx context.Context, r Route) (Route, error)
	// DeleteRoute removes the route id of that version ("" for any).
	DeleteRoute(ctx context.Context, id, version string) error
	// Watch sends a value after every change to a connection or route,
	// whoever made it (this instance, another on the same database, a
	// hand edit of the file), until ctx ends, and then closes the
	// channel; a reader lists again at each value. Changes close together
	// may be sent as one.
	Watch(ctx context.Context) (<-chan struct{}, error)
}

// People maps network identities ("irc:alice", "xmpp:alice@example.org",
// "telegram:123456", "slack:U123") to the people of the users file.
type People interface {
	// Person returns the id of the person (as in user:<id>) that
	// identity is mapped to, whatever the case of either (irc:Alice is
	// irc:alice, as IRC and XMPP have it; the other networks' ids come
	// in one case), and false when it maps to nobody.
	Person(identity string) (string, bool)
}

// Identities is a People that can list what it maps: every identity and
// its person. A preflight asks it who a route would let in.
type Identities interface {
	People
	// Identities returns every identity the directory maps, with the id of
	// its person.
	Identities() map[string]string
}

// ConnState is how a connection stands.
type ConnState string

// The states of a connection.
const (
	// Connected: logged in, messages flow.
	Connected ConnState = "connected"
	// Connecting: dialling, for the first time or again.
	Connecting ConnState = "connecting"
	// Failing: the last dial failed, or the connection dropped; it is
	// dialled again with backoff.
	Failing ConnState = "failing"
	// Off: disabled, or no enabled route uses it, so it is not dialled.
	Off ConnState = "off"
	// Elsewhere: another instance on the same database holds it; this one
	// takes it over if that one dies.
	Elsewhere ConnState = "elsewhere"
)

// State is how a connection stands now, as the runtime reports it.
type State struct {
	// Connection is the connection's id.
	Connection string `json:"connection"`
	// State is what it is doing.
	State ConnState `json:"state"`
	// Reason says why it is failing or off, in one sentence.
	Reason string `json:"reason,omitempty"`
	// Since is when it came to this state.
	Since time.Time `json:"since"`
}
