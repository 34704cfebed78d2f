// Package route lets people talk to a bot from the chat networks they
// already use (IRC, XMPP, Telegram, Slack…). A connection is one login to
// one network; a route sends the messages of one scope of a connection (a
// direct message, a group or room, a thread) to one bot's main chat, as the
// person the network's user maps to.
//
// This file holds the port every network adapter implements: a Network
// dials a Conn, which receives messages, sends, edits and asks. Adapters
// live in sub-packages (route/irc, route/xmpp, route/telegram,
// route/slack) and import this package alone; the runtime that turns a
// message into a chat turn never knows which network it talks to.
package route

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"time"
)

// ErrUnsupported is returned by a Conn method the network cannot do (Edit
// on IRC, say). The runtime then falls back: a new message instead of an
// edit.
var ErrUnsupported = errors.New("the network cannot do that")

// ErrRedial ends a connection's Receive when the network asked it to
// connect again (Slack's Socket Mode does now and then): the runtime dials
// again at once and shows no failure.
var ErrRedial = errors.New("the network asked for a new connection")

// Network is one chat network's adapter.
type Network interface {
	// Name is the network's name as connections and identities spell it:
	// "irc", "xmpp", "telegram", "slack". Lowercase letters only.
	Name() string
	// Dial logs in with the connection's settings and secrets and returns
	// the live connection. It fails with one sentence naming what was
	// wrong (the server refused the login, the nick is taken, the token
	// is refused…) and never with a secret in the error. ctx bounds the
	// login only, not the connection's life.
	Dial(ctx context.Context, c Dial) (Conn, error)
}

// Dial is what a Network needs to log in.
type Dial struct {
	// Connection is the connection's id, for logs.
	Connection string
	// Settings are the connection's safe settings, by the adapter's own
	// names (irc: server, nick, channels…; xmpp: jid, server…; telegram:
	// api; slack: api, workspace…). None is a secret.
	Settings map[string]string
	// Secrets are the connection's credentials by name (password, token,
	// signingSecret…), resolved from the vault at dial time. An adapter
	// sends them to its network only, never logs them, never puts them in
	// an error.
	Secrets map[string]string
	// Logger receives the adapter's logs; nil discards.
	Logger *slog.Logger
}

// Conn is one live connection to a network. Its methods are safe to call
// concurrently. After Close, or once Receive has returned an error other
// than ctx's, the connection is gone: the runtime dials again with
// backoff.
type Conn interface {
	// Receive blocks until the next message for the bot arrives, ctx ends,
	// or the connection fails (an error saying why; ErrRedial when the
	// network asked it to connect again). It delivers messages
	// in the order the network gave them, and never the connection's own.
	Receive(ctx context.Context) (Message, error)
	// Send posts markdown text to a scope, converted to what the network
	// renders and split to its size limit (see Split), and returns the
	// network's ids of the messages it sent, in order; an id is empty
	// where the network gives none (IRC).
	Send(ctx context.Context, to Scope, markdown string) ([]string, error)
	// Edit replaces the text of a message sent earlier (id from Send or
	// Ask), where the network can; ErrUnsupported where it cannot.
	Edit(ctx context.Context, to Scope, id, markdown string) error
	// Ask posts a question with its options: buttons where the network has
	// them (Telegram inline keyboards, Slack Block Kit), numbered lines
	// where not ("1. Yes" … "reply with a number"). An answer comes back
	// from Receive as a Message with Answer set (buttons) or as plain text
	// the runtime reads ("1", "/approve"…). It returns the question's
	// message id, as Send does.
	Ask(ctx context.Context, to Scope, q Question) (string, error)
	// Limits are the network's size and rate limits, which the runtime
	// and Send keep.
	Limits() Limits
	// Close logs out and ends the connection; a blocked Receive returns.
	Close() error
}

// ScopeKind is what a scope is: a direct message, a group, or a thread.
type ScopeKind string

// The scope kinds, narrowest first.
const (
	// Direct is a conversation between the bot's account and one person.
	Direct ScopeKind = "direct"
	// Thread is one thread in a group, where the network has threads.
	Thread ScopeKind = "thread"
	// Group is a channel, room or group chat with many people.
	Group ScopeKind = "group"
)

// Scope is where a message was said and where a reply goes.
type Scope struct {
	Kind ScopeKind `json:"kind"`
	// ID is the network's name for the conversation: an IRC nick
	// (direct) or "#channel", an XMPP JID or MUC room JID, a Telegram chat
	// id, a Slack channel id.
	ID string `json:"id"`
	// Thread is the thread's id within ID, for Kind Thread (Slack's
	// thread_ts, Telegram's message_thread_id).
	Thread string `json:"thread,omitempty"`
}

// Is reports whether s and o are one conversation: the same kind and
// thread, and IDs that are the same name (SameID).
func (s Scope) Is(o Scope) bool {
	return s.Kind == o.Kind && SameID(s.ID, o.ID) && s.Thread == o.Thread
}

// SameID reports whether a and b name one conversation: IRC nicks and
// channels and XMPP addresses are the same whatever their case (#Bots is
// #bots), and the other networks' ids come in one case.
func SameID(a, b string) bool { return strings.EqualFold(a, b) }

// Message is one message from a network user.
type Message struct {
	// ID is the network's id of the message, unique within the
	// connection, so that a message delivered twice (a reconnect, a
	// webhook retry) is answered once. Adapters whose network has no ids
	// (IRC) make one that is stable for a redelivery where they can.
	ID string
	// Scope is where it was said.
	Scope Scope
	// From is who said it, as "<network>:<id>" (irc:alice,
	// irc:account:alice, xmpp:alice@example.org, telegram:123456,
	// slack:U123); "" when the network does not say who (an XMPP room
	// that hides its occupants' JIDs from the bot shows only a nick,
	// which anyone may take; on an IRC connection that names accounts, a
	// sender not logged in): the relay passes on nothing they say.
	From string
	// Unnamed, when From is "", is what the bot tells the sender: why it
	// cannot tell who they are and what they can do, in the bot's voice
	// ("I pass on only what people logged in … say: …"); "" says the room
	// hides its members' addresses.
	Unnamed string
	// ReplyTo is the id a direct message reaches the sender at, when it
	// is not From's (an IRC nick, where From names the sender's account).
	ReplyTo string
	// Name is how the network shows the sender, for the chat's context.
	Name string
	// Text is what they wrote, as the network delivered it (no markup
	// conversion).
	Text string
	// Answer is set when the message is a press on a button of a question
	// sent by Ask.
	Answer *Answer
	// At is when the network says it was sent (zero when it does not).
	At time.Time
}

// Question is what Ask sends: a text and the options a person picks from.
type Question struct {
	// ID is the runtime's id of the question, echoed in Answer.
	ID string
	// Markdown is the question's text.
	Markdown string
	// Options are the choices, in order.
	Options []Option
}

// Option is one choice of a question.
type Option struct {
	ID    string
	Label string
}

// Answer is a press on a question's button.
type Answer struct {
	Question string
	Option   string
}

// Limits are a network's limits.
type Limits struct {
	// MaxText is the longest text one message may carry, in bytes of what
	// the network is sent (after conversion).
	MaxText int
	// Every is the least time between two messages sent to one scope
	// (a network's flood limit); zero means none.
	Every time.Duration
}
