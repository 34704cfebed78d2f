// Package wake is the back-session side of a bot chat: a message said in a
// main chat wakes a back session of a real agent in the bot's folder, which
// answers into the chat.
//
// It holds the two ports the wake uses, SessionHost (where back sessions
// live) and Harness (what runs one back session's turns for an agent
// provider), the session rows, and the Waker: session names, the context
// block and delegation _meta, the send with its ten-second confirmation,
// following the back turn, post_message, the question and approval relay
// and the outcome policy. The SessionHost that runs back sessions
// in-process is package wake/local.
package wake

import (
	"context"
	"errors"

	"github.com/agenthost/bots/ahp"
)

// Sentinel errors of a SessionHost.
var (
	// ErrNoSession is returned for a session the host does not hold (never
	// started, disposed, or lost in a restart).
	ErrNoSession = errors.New("the host holds no such session")
	// ErrRefused is returned (wrapped, with the host's reason) for a start,
	// a send or an action the host would not take.
	ErrRefused = errors.New("refused")
)

// RefusedError is a host's refusal with its reason; errors.Is(err,
// ErrRefused) holds of it. wake/local's Host refuses with one; another host may
// wrap ErrRefused with fmt.Errorf instead.
type RefusedError struct {
	// Reason says in one sentence what the host would not do, and why.
	Reason string
	// Err is the error behind the refusal, if any.
	Err error
}

// Error is the reason, then what ErrRefused says.
func (e *RefusedError) Error() string { return e.Reason + ": " + ErrRefused.Error() }

// Unwrap returns the error behind the refusal.
func (e *RefusedError) Unwrap() error { return e.Err }

// Is reports whether target is ErrRefused.
func (e *RefusedError) Is(target error) bool { return target == ErrRefused }

// SessionHost is where back sessions live: VS Code's agent host, an
// embedding host's own sessions, or wake/local's Host. A session is addressed by its
// URI; its one chat, where turns run, is its default chat at
// ahp.DefaultChatURI(session).
//
// Every method may be called concurrently. Methods that take ctx return
// ctx's error when it ends first; a send whose ctx ended may still have
// been taken (the caller must not send it again).
type SessionHost interface {
	// Start creates a session from spec and returns its URI. A spec the
	// host cannot honour (an unknown provider or preset, a folder it may
	// not use) is ErrRefused, wrapped with the reason.
	Start(ctx context.Context, spec Spec) (session string, err error)

	// Has reports whether the host still holds the session.
	Has(ctx context.Context, session string) (bool, error)

	// Dispose ends the session and its turns. An unknown session is
	// ErrNoSession.
	Dispose(ctx context.Context, session string) error

	// Send hands a pending message to the session's chat, as a client's
	// chat/pendingMessageSet would: a queued message starts a turn when
	// the chat is idle, or after the turns in front of it; a steering
	// message is injected into the running turn. It returns once the host
	// has taken it (the confirmation). An unknown session is ErrNoSession;
	// a message the host will not take is ErrRefused.
	Send(ctx context.Context, session string, m Pending) error

	// Dispatch applies a client's action to the session's chat: answers to
	// input requests (chat/inputCompleted), confirmations
	// (chat/toolCallConfirmed), the result of a tool the caller provides
	// (chat/toolCallComplete), taking back a waiting message
	// (chat/pendingMessageRemoved) and stopping a turn
	// (chat/turnCancelled). An action that does not apply is ErrRefused;
	// an unknown session is ErrNoSession.
	Dispatch(ctx context.Context, session string, a ahp.Action) error

	// Follow returns the session chat's state now and every action applied
	// to it afterwards, in order. The channel is never blocked on: the host
	// queues for a slow reader. It is closed when ctx ends or the session
	// is gone. An unknown session is ErrNoSession.
	Follow(ctx context.Context, session string) (ahp.ChatState, <-chan ahp.Action, error)
}

// Reloader is an optional interface of a SessionHost whose sessions' logs
// other hosts on other instances write too: Reload reads the session back
// from its log, over any copy the host holds, before the host continues
// it; replaced reports whether a copy it held was read over (what followed
// it must follow the session anew). A session with no log is
// ErrNoSession.
type Reloader interface {
	Reload(ctx context.Context, session string, spec Spec) (replaced bool, err error)
}

// Idler is an optional interface of a SessionHost that can say when a
// session has nothing to do: Idle returns once its chat has no running
// turn and nothing waiting (or it is gone), or ctx ends. A Waker holding a
// lease waits for it before it lets the lease go.
type Idler interface {
	Idle(ctx context.Context, session string) error
}

// Lister is an optional interface of a SessionHost that lists the back
// sessions it holds (those whose _meta names BackSessionMeta), so that a
// service can end the ones whose person may no longer read their bot.
type Lister interface {
	// BackSessions returns every back session the host holds now, in no
	// particular order.
	BackSessions() []Held
	// HeldAt returns the back session whose session or chat URI is uri;
	// ok is false when the host holds none there.
	HeldAt(uri string) (held Held, ok bool)
}

// Held is a back session a host holds: its URI, and the bot and person
// its _meta names.
type Held struct {
	Session, Bot, Person string
}

// Restorer is an optional interface of a SessionHost that can hold a
// session again under the URI it had, after a restart lost it. The Waker
// restores the session a row names, rather than start a new one, so the
// person's next message continues the same back session and the chat the
// main chat links to opens again.
type Restorer interface {
	// Restore holds the session at uri again, started from spec; a
	// session the host holds is left as it is. A URI or spec the host
	// would not take is ErrRefused, wrapped with the reason.
	Restore(ctx context.Context, session string, spec Spec) error
}

// Pending is a message for a session's chat queue.
type Pending struct {
	// Kind is ahp.PendingQueued or ahp.PendingSteering.
	Kind string
	// ID identifies the pending message; the turn it becomes names it in
	// chat/turnStarted's queuedMessageId.
	ID string
	// Message is the message.
	Message ahp.Message
}

// Spec is what a back session is started with. A session started from a
// Spec loads none of the settings of the person who runs the host: its
// rules are the AGENTS.md in Dir.
type Spec struct {
	// Preset is the session preset to start from; when set it wins over
	// Provider and Model.
	Preset string
	// Provider is the agent provider the session runs on.
	Provider string
	// Model is the model it asks for; "" is the provider's default.
	Model string
	// Dir is the folder the session works in.
	Dir string
	// Owner is whose session it is: user:<id> or root:<host>.
	Owner string
	// Title is the session's title.
	Title string
	// SystemPrompt is what the session is told before any message.
	SystemPrompt string
	// Client names the tools a client of the host provides to the
	// session, executed by that client: the session's turns call them,
	// and the client answers each call with chat/toolCallComplete through
	// Dispatch. They run without a confirmation.
	Client *ahp.SessionActiveClient
	// Deny names tools the session may not call: a call to one is
	// refused, even one of Client's.
	Deny []string
	// Meta is the session's _meta.
	Meta map[string]any
}
