package engine

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/agenthost/bots/access"
	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/errcode"
)

// Host is what the engine and the wire need from the service behind them:
// who a token is, the resources of each URI scheme, the state channels a
// client subscribes to, and the _meta of the initialize result. The bot
// service implements it. It grows with optional interfaces found by type assertion: a Host
// may be Methods (the session methods), a Channel may be an Unsubscriber
// and a Dispatcher.
//
// Errors are errcode errors: package transport maps their codes to
// JSON-RPC numbers (Invalid -32602, NotFound -32008, PermissionDenied
// -32009, AlreadyExists -32010, Conflict -32011, Unauthenticated -32007,
// Unsupported -32601, Unavailable -32603 with its message, since AHP has no
// code for "try again"). An error without a code, or with Internal, is
// answered -32603 "internal error" and logged once with its detail.
//
// Every method may be called concurrently, from many connections.
type Host interface {
	// Authenticate returns the principal a connection presenting token
	// acts as; token is "" when the connection presented none. ok false
	// refuses the connection with HTTP 401 at the upgrade: a wrong token,
	// or a missing one where one is required. A host with no users
	// directory answers access.RootPrincipal(), true for every token.
	// Comparing tokens in constant time is the host's duty
	// (usersfile.Users does). It must not block.
	Authenticate(token string) (p access.Principal, ok bool)

	// Meta returns the _meta of the initialize result for the caller
	// (ahpd.resourceProviders, ahpd.channels…); nil for none.
	Meta(ctx context.Context, c Caller) (map[string]any, error)

	// Resources returns the provider serving URIs of the scheme (lower
	// case, without the colon), or nil when none does: the resource
	// methods on such a URI are answered -32601. It must not block and
	// must return a nil interface, not a typed nil, for none.
	Resources(scheme string) ResourceProvider

	// Channel returns the state channel at uri, as the client spelled it,
	// for the caller to subscribe or dispatch to. No such channel is an
	// errcode.NotFound (a dispatch to it is then ignored, as the protocol
	// asks); one the caller may not see is errcode.PermissionDenied.
	// Channel is asked on every subscribe and every dispatch, so it should
	// be quick.
	Channel(ctx context.Context, c Caller, uri string) (Channel, error)
}

// Caller is who makes a request: the client id it gave at initialize and
// the principal its connection authenticated as.
type Caller struct {
	// ClientID is the client's opaque id from initialize or reconnect.
	ClientID string
	// Principal is who the connection's token says the client is.
	Principal access.Principal
}

// Call is one request for the host to answer.
type Call struct {
	Caller
	// Method is the JSON-RPC method, e.g. "resourceRead", "createSession".
	Method string
	// URI is the URI the request is about: params.uri for the resource
	// methods (params.source for resourceMove and resourceCopy), and
	// params.channel for the others.
	URI string
	// Params are the params as the client sent them (a JSON object), for
	// the host to decode into the method's own type.
	Params json.RawMessage
}

// Decode decodes the call's params into v: an errcode.Invalid error
// naming what was wrong when they do not decode (DecodeParams).
func (c Call) Decode(v any) error { return DecodeParams(c.Params, v) }

// DecodeParams decodes a request's params into v: an errcode.Invalid
// error when they do not decode, naming the field of the wrong kind
// when there is one.
func DecodeParams(raw json.RawMessage, v any) error {
	if err := json.Unmarshal(raw, v); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) && typeErr.Field != "" {
			return errcode.New(errcode.Invalid, "params.%s must be %s", typeErr.Field, typeErr.Type)
		}
		return errcode.New(errcode.Invalid, "params are not valid: %v", err)
	}
	return nil
}

// ResourceProvider serves the resource methods (resourceRead,
// resourceWrite, resourceList, resourceResolve, resourceDelete,
// resourceMove, resourceCopy, resourceMkdir, resourceRequest and
// createResourceWatch) for one URI scheme.
type ResourceProvider interface {
	// ServeResource answers call, whose URI has the provider's scheme. The
	// result is marshalled as the JSON-RPC result. An operation the
	// provider does not serve answers errcode.Unsupported (-32601).
	ServeResource(ctx context.Context, call Call) (result any, err error)
}

// JSONAppender is a result that writes its own JSON, which transport then
// writes as it is, without reflection: AppendJSON appends to b exactly
// what encoding/json writes for the value with HTML escaping off (its
// MarshalJSON, compact), so that either way the answer is the same bytes.
// A result a request answers on every call (a read of a bot) uses it to
// be written in one pass.
type JSONAppender interface {
	json.Marshaler
	AppendJSON(b []byte) []byte
}

// Methods is the optional part of a Host that answers the session methods:
// createSession, disposeSession, listSessions, createChat, disposeChat,
// fetchTurns, resolveSessionConfig, sessionConfigCompletions, completions
// and authenticate. A host without it answers them -32601, as does a
// HandleMethod returning errcode.Unsupported.
//
// For createSession and disposeSession, errcode.AlreadyExists answers
// -32003 (SessionAlreadyExists) and errcode.NotFound -32001
// (SessionNotFound), as the protocol names them.
type Methods interface {
	// HandleMethod answers call; a nil result is sent as JSON null (what
	// createSession answers).
	HandleMethod(ctx context.Context, call Call) (result any, err error)
}

// Channel is a state channel a client subscribes to by URI: ahp-root://,
// x-ahpd-bots://, a resource watch, a session, a chat. Its owner publishes
// the channel's actions on the Bus under the channel's URI.
type Channel interface {
	// URI is the channel's own URI: the one its owner publishes on. It
	// may differ from the spelling a client subscribed with; envelopes
	// carry the client's spelling.
	URI() string

	// Subscribe returns the snapshot the subscriber starts from. It is
	// called after the subscriber is registered on the Bus, so every
	// action published from then on reaches the subscriber unless
	// Snapshot.Seq says the state already holds it. sub stays the same
	// pointer for the whole subscription, for projections to recognise.
	// An error refuses the subscription and is answered to the client.
	Subscribe(ctx context.Context, sub *Subscriber) (Snapshot, error)
}

// Unsubscriber is the optional part of a Channel that hears a subscriber
// leave: by unsubscribe, by a reconnect that omits the channel, by a
// subscribe that replaces it, or when the client's connection is gone
// for longer than the replay retention. It is never called for a
// subscription that Bus.End ended. It must not block for long.
type Unsubscriber interface {
	Unsubscribe(sub *Subscriber)
}

// Dispatcher is the optional part of a Channel that takes actions from
// clients (dispatchAction). A channel without it rejects every action.
type Dispatcher interface {
	// Dispatch validates d.Action. To accept it, the owner applies it and
	// publishes it on the Bus with Event.Origin set to &d.Origin (the
	// echo every subscriber gets), then returns nil; an accepted action
	// that changes nothing may be left unpublished. A returned error
	// rejects the action: the sender alone gets it back with
	// rejectionReason set to the error's message; errcode.NotFound drops
	// it silently, as the protocol asks for an unknown channel.
	Dispatch(ctx context.Context, d Dispatch) error
}

// Snapshot is the state a subscription starts from.
type Snapshot struct {
	// State is the channel's state, marshalled as the snapshot's state;
	// nil for a stateless channel (the subscribe result is then {}).
	State any
	// Seq is the serverSeq of the last action published on this channel
	// that State already holds (the value Bus.Publish returned for it), or
	// 0 when it holds none. Actions with a higher serverSeq follow the
	// snapshot; those at or below it are not sent again. A channel that
	// takes its snapshot and publishes under one lock gets this right.
	Seq int64
}

// Subscriber is one client's subscription to one channel.
type Subscriber struct {
	// ID is unique among the subscriptions of a Bus.
	ID uint64
	// URI is the channel URI exactly as the client spelled it.
	URI string
	// Caller is the subscribing client.
	Caller
}

// Dispatch is an action a client dispatched to a channel.
type Dispatch struct {
	// Caller is the dispatching client.
	Caller
	// Channel is the channel URI as the client spelled it.
	Channel string
	// Origin is the client's {clientId, clientSeq}; an accepted action is
	// published with it.
	Origin Origin
	// Action is the action as sent: a JSON object with a string "type".
	Action json.RawMessage
}

// Decode decodes the action: an errcode.Invalid error when it is not
// one.
func (d Dispatch) Decode() (ahp.Action, error) {
	var a ahp.Action
	if err := json.Unmarshal(d.Action, &a); err != nil {
		return ahp.Action{}, errcode.New(errcode.Invalid, "the action does not decode: %v", err)
	}
	return a, nil
}

// Origin says which client dispatch an action echoes.
type Origin struct {
	ClientID  string `json:"clientId"`
	ClientSeq int64  `json:"clientSeq"`
}

// AuthWatcher is the optional part of a Host whose tokens may stop
// holding while connections are open, as a users file that changes. A
// transport server asks it once, when it is made, and after each change
// authenticates every open connection's token again.
type AuthWatcher interface {
	// WatchAuth calls fn after each change of who the tokens
	// authenticate as; fn does not block for long. The returned function
	// stops the calls; the server calls it when it closes.
	WatchAuth(fn func()) (stop func())
}
