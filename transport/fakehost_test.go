package transport

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/agenthost/bots/access"
	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/engine"
	"github.com/agenthost/bots/errcode"
)

// fakeHost is a small Host for the tests:
//
//   - tokens: "root-token" is root, "soft-token" is user soft, "bob-token"
//     is user bob; any other token is refused. With open set, every token
//     is root (a host with no users directory).
//   - channels: ahp-root:// (state {agents: []}), test:/notes (takes
//     notes/add {text} and notes/noop; also spelled test:///notes),
//     test:/feed (each reader sees the items it owns; root sees all),
//     test:/secret (root only), test:/broken (its snapshot fails);
//     anything else is not found.
//   - ahp-session:/s1 and ahp-chat:/c1: a session and its chat in the
//     protocol's own shapes, folded with the ahp reducers; the chat takes
//     the actions a client dispatches (chat/turnStarted,
//     chat/turnCancelled, chat/inputAnswerChanged, chat/inputCompleted,
//     chat/error), publishing each as it is.
//   - resources: the mem: scheme answers by path (mem://found,
//     mem://missing, mem://denied, …); the ro: scheme serves
//     resourceRead only; every other scheme is unserved.
//   - methods: listSessions answers the summary of ahp-session:/s1;
//     fetchTurns answers the turns of ahp-chat:/c1; createSession of
//     ahp-session:/dup is AlreadyExists; the rest Unsupported.
type fakeHost struct {
	bus  *engine.Bus
	open bool

	mu       sync.Mutex
	channels map[string]*fakeChannel
	session  *stateChannel[ahp.SessionState]
	chat     *stateChannel[ahp.ChatState]
	unsubs   []string        // "uri#subscriberID", in order
	refused  map[string]bool // tokens taken away since
}

func newFakeHost(bus *engine.Bus) *fakeHost {
	h := &fakeHost{bus: bus, channels: map[string]*fakeChannel{}}
	for _, uri := range []string{"ahp-root://", "test:/notes", "test:/feed", "test:/secret", "test:/broken"} {
		h.channels[uri] = &fakeChannel{h: h, uri: uri, items: []any{}}
	}
	h.session = &stateChannel[ahp.SessionState]{bus: bus, uri: fakeSession, state: fakeSessionState(), apply: ahp.ApplySession}
	h.chat = &stateChannel[ahp.ChatState]{bus: bus, uri: fakeChat, state: fakeChatState(), apply: ahp.ApplyChat, takes: map[string]bool{
		"chat/turnStarted": true, "chat/turnCancelled": true, "chat/inputAnswerChanged": true,
		"chat/inputCompleted": true, "chat/error": true,
	}}
	return h
}

const (
	fakeSession = "ahp-session:/s1"
	fakeChat    = "ahp-chat:/c1"
)

func fakeSessionState() ahp.SessionState {
	files, mod := int64(2), "2026-01-01T00:00:00.000Z"
	movable := true
	var s ahp.SessionState
	s.Provider, s.Title, s.Status = "fake", "S1", ahp.SessionStatus(1)
	s.WorkingDirectories = []string{"file:///work/s1", "file:///work/extra"}
	s.Lifecycle = ahp.LifecycleReady
	s.Chats = ahp.List[ahp.ChatSummary]{{Resource: fakeChat, Title: "C1", Status: 1, ModifiedAt: mod, Changes: &ahp.ChangesSummary{Files: &files}, Movable: &movable, WorkingDirectories: []string{"file:///work/s1"}}}
	s.DefaultChat = fakeChat
	return s
}

func fakeChatState() ahp.ChatState {
	var c ahp.ChatState
	c.Resource, c.Title, c.Status, c.ModifiedAt = fakeChat, "C1", 1, "2026-01-01T00:00:00.000Z"
	c.WorkingDirectories = []string{"file:///work/s1"}
	c.BackgroundWork = []ahp.BackgroundWork{{Kind: ahp.BackgroundShell, ID: "bg1", Label: "watch", StartedAt: "2026-01-01T00:00:00.000Z", Command: "make watch"}}
	return c
}

// fakeSummary is the summary of ahp-session:/s1, as listSessions and
// root/sessionAdded carry it.
func fakeSummary() ahp.SessionSummary {
	st := fakeSessionState()
	return ahp.SessionSummary{
		SessionMetadata: st.SessionMetadata, Resource: fakeSession,
		CreatedAt: "2026-01-01T00:00:00.000Z", ModifiedAt: "2026-01-01T00:00:00.000Z",
		Chats: []ahp.SessionChatSummary{{Resource: fakeChat, Title: "C1"}}, DefaultChat: fakeChat,
	}
}

var fakeTokens = map[string]access.Principal{
	"root-token": access.RootPrincipal(),
	"soft-token": {User: "soft", Grants: []string{"bot:*"}, Memberships: []string{"backend"}},
	"bob-token":  {User: "bob"},
}

func (h *fakeHost) Authenticate(token string) (access.Principal, bool) {
	if h.open {
		return access.RootPrincipal(), true
	}
	h.mu.Lock()
	refused := h.refused[token]
	h.mu.Unlock()
	p, ok := fakeTokens[token]
	return p, ok && !refused
}

// refuse takes a token away: Authenticate refuses it from now on.
func (h *fakeHost) refuse(token string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.refused == nil {
		h.refused = map[string]bool{}
	}
	h.refused[token] = true
}

func (h *fakeHost) Meta(_ context.Context, c engine.Caller) (map[string]any, error) {
	return map[string]any{
		"ahpd.principal": c.Principal.String(),
		"ahpd.resourceProviders": map[string]any{
			"mem": map[string]any{"title": "Memory", "root": "mem://", "operations": []string{"get", "put"}},
		},
	}, nil
}

func (h *fakeHost) Resources(scheme string) engine.ResourceProvider {
	switch scheme {
	case "mem":
		return memProvider{}
	case "ro":
		return readOnlyProvider{}
	}
	return nil
}

func (h *fakeHost) Channel(_ context.Context, c engine.Caller, uri string) (engine.Channel, error) {
	if uri == "test:///notes" {
		uri = "test:/notes"
	}
	if uri == "test:/secret" && !c.Principal.Root {
		return nil, errcode.New(errcode.PermissionDenied, "only root may read %s", uri)
	}
	switch uri {
	case fakeSession:
		return h.session, nil
	case fakeChat:
		return h.chat, nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	ch := h.channels[uri]
	if ch == nil {
		return nil, errcode.New(errcode.NotFound, "no channel %s", uri)
	}
	return ch, nil
}

func (h *fakeHost) HandleMethod(_ context.Context, call engine.Call) (any, error) {
	switch call.Method {
	case "listSessions":
		return ahp.ListSessionsResult{Items: ahp.List[ahp.SessionSummary]{fakeSummary()}}, nil
	case "fetchTurns":
		if call.URI == fakeChat {
			return map[string]any{"turns": h.chat.current().Turns}, nil
		}
	case "createSession":
		if call.URI == "ahp-session:/dup" {
			return nil, errcode.New(errcode.AlreadyExists, "session %s exists", call.URI)
		}
	}
	return nil, errcode.New(errcode.Unsupported, "%s is not served", call.Method)
}

func (h *fakeHost) unsubscribed() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.unsubs)
}

// publish applies a server action to a channel.
func (h *fakeHost) publish(uri string, action json.RawMessage) error {
	switch uri {
	case fakeSession:
		return h.session.publish(action, nil)
	case fakeChat:
		return h.chat.publish(action, nil)
	}
	h.mu.Lock()
	ch := h.channels[uri]
	h.mu.Unlock()
	if ch == nil {
		return fmt.Errorf("no channel %s", uri)
	}
	return ch.apply(action, nil)
}

// fakeChannel keeps a list of items; an action {type, text, owner?} adds
// one. Its lock is held across applying and publishing, and across taking
// a snapshot, so Snapshot.Seq is exact.
type fakeChannel struct {
	h   *fakeHost
	uri string

	mu      sync.Mutex
	items   []any
	lastSeq int64
}

func (ch *fakeChannel) URI() string { return ch.uri }

func (ch *fakeChannel) Subscribe(_ context.Context, sub *engine.Subscriber) (engine.Snapshot, error) {
	if ch.uri == "test:/broken" {
		return engine.Snapshot{}, errors.New("the broken channel's disk is on fire")
	}
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if ch.uri == "ahp-root://" {
		return engine.Snapshot{State: map[string]any{"agents": []any{}}, Seq: ch.lastSeq}, nil
	}
	items := []any{}
	for _, it := range ch.items {
		if ch.uri != "test:/feed" || visible(it, sub) {
			items = append(items, it)
		}
	}
	return engine.Snapshot{State: map[string]any{"items": items}, Seq: ch.lastSeq}, nil
}

// visible reports whether a feed item is the subscriber's to see.
func visible(item any, sub *engine.Subscriber) bool {
	m, _ := item.(map[string]any)
	return sub.Principal.Root || m["owner"] == sub.Principal.User
}

func (ch *fakeChannel) Unsubscribe(sub *engine.Subscriber) {
	ch.h.mu.Lock()
	defer ch.h.mu.Unlock()
	ch.h.unsubs = append(ch.h.unsubs, fmt.Sprintf("%s#%d", sub.URI, sub.ID))
}

func (ch *fakeChannel) Dispatch(_ context.Context, d engine.Dispatch) error {
	if ch.uri == "ahp-root://" || ch.uri == "test:/feed" {
		return errcode.New(errcode.Invalid, "%s takes no actions", ch.uri)
	}
	var a struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(d.Action, &a); err != nil {
		return errcode.Wrap(errcode.Invalid, err, "the action does not parse")
	}
	switch a.Type {
	case "notes/noop":
		return nil
	case "notes/add":
		if strings.TrimSpace(a.Text) == "" {
			return errcode.New(errcode.Invalid, "a note needs text")
		}
		return ch.apply(d.Action, &d.Origin)
	case "notes/crash":
		return errors.New("a bug with a secret detail")
	}
	return errcode.New(errcode.Invalid, "unknown action type %q", a.Type)
}

func (ch *fakeChannel) apply(action json.RawMessage, origin *engine.Origin) error {
	var item map[string]any
	if err := json.Unmarshal(action, &item); err != nil {
		return err
	}
	ch.mu.Lock()
	defer ch.mu.Unlock()
	ev := engine.Event{Action: action, Origin: origin}
	if ch.uri == "test:/feed" {
		ev.For = func(sub *engine.Subscriber) (any, bool) {
			if !visible(item, sub) {
				return nil, false
			}
			return action, true
		}
	}
	seq, err := ch.h.bus.Publish(ch.uri, ev)
	if err != nil {
		return err
	}
	ch.items = append(ch.items, item)
	ch.lastSeq = seq
	return nil
}

// memProvider answers the mem: scheme by the URI's path.
type memProvider struct{}

func (memProvider) ServeResource(_ context.Context, call engine.Call) (any, error) {
	switch strings.TrimPrefix(call.URI, "mem://") {
	case "found":
		if call.Method == "resourceRead" {
			return map[string]any{"data": "hello", "encoding": "utf-8"}, nil
		}
		return struct{}{}, nil
	case "missing":
		return nil, errcode.New(errcode.NotFound, "%s does not exist", call.URI)
	case "denied":
		return nil, errcode.New(errcode.PermissionDenied, "%s may not %s it", call.Principal, call.Method)
	case "exists":
		return nil, errcode.New(errcode.AlreadyExists, "%s exists", call.URI)
	case "stale":
		return nil, errcode.New(errcode.Conflict, "ifMatch does not match %s", call.URI)
	case "invalid":
		return nil, errcode.New(errcode.Invalid, "the body of %s is not a bot", call.URI)
	case "unauth":
		return nil, errcode.New(errcode.Unauthenticated, "sign in first")
	case "busy":
		return nil, errcode.New(errcode.Unavailable, "the store is shutting down")
	case "boom":
		return nil, fmt.Errorf("open /secret/path: %w", errors.New("disk on fire"))
	case "big":
		return map[string]any{"data": strings.Repeat("b", 64<<10), "encoding": "utf-8"}, nil
	case "watch":
		if call.Method == "createResourceWatch" {
			return map[string]any{"channel": "ahp-resource-watch:/1"}, nil
		}
	}
	return nil, errcode.New(errcode.Unsupported, "%s does not serve %s", call.URI, call.Method)
}

// readOnlyProvider serves resourceRead only.
type readOnlyProvider struct{}

func (readOnlyProvider) ServeResource(_ context.Context, call engine.Call) (any, error) {
	if call.Method != "resourceRead" {
		return nil, errcode.New(errcode.Unsupported, "the ro: scheme does not serve %s", call.Method)
	}
	return map[string]any{"data": "read only", "encoding": "utf-8"}, nil
}

// stateChannel is a channel whose state S the ahp reducers fold: what it
// publishes is applied first, under the lock its snapshots are taken
// under. takes lists the action types a client may dispatch to it.
type stateChannel[S any] struct {
	bus   *engine.Bus
	uri   string
	apply func(S, ahp.Action) S
	takes map[string]bool

	mu      sync.Mutex
	state   S
	lastSeq int64
}

func (ch *stateChannel[S]) URI() string { return ch.uri }

func (ch *stateChannel[S]) Subscribe(context.Context, *engine.Subscriber) (engine.Snapshot, error) {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return engine.Snapshot{State: ch.state, Seq: ch.lastSeq}, nil
}

func (ch *stateChannel[S]) current() S {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return ch.state
}

func (ch *stateChannel[S]) Dispatch(_ context.Context, d engine.Dispatch) error {
	var a struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(d.Action, &a); err != nil || !ch.takes[a.Type] {
		return errcode.New(errcode.Invalid, "%s takes no %q", ch.uri, a.Type)
	}
	return ch.publish(d.Action, &d.Origin)
}

func (ch *stateChannel[S]) publish(raw json.RawMessage, origin *engine.Origin) error {
	var a ahp.Action
	if err := json.Unmarshal(raw, &a); err != nil {
		return errcode.Wrap(errcode.Invalid, err, "the action does not parse")
	}
	ch.mu.Lock()
	defer ch.mu.Unlock()
	seq, err := ch.bus.Publish(ch.uri, engine.Event{Action: raw, Origin: origin})
	if err != nil {
		return err
	}
	ch.state = ch.apply(ch.state, a)
	ch.lastSeq = seq
	return nil
}
