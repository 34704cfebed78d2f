package wake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	iofs "io/fs"
	"log/slog"
	"maps"
	"net/url"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/chatlog"
	"github.com/agenthost/bots/engine"
	"github.com/agenthost/bots/errcode"
	"github.com/agenthost/bots/internal/feed"
	"github.com/agenthost/bots/lease"
	"github.com/agenthost/bots/telemetry"
)

// Preset is a named way to start a session: a provider and a model.
type Preset struct {
	Provider, Model string
}

// LocalConfig configures a LocalHost.
type LocalConfig struct {
	// Telemetry receives the back sessions by agent and state, and a span
	// per back turn, a child of the wake that sent its message; nil
	// records none.
	Telemetry *telemetry.Hub
	// Bus carries the sessions' actions to subscribers; nil makes one. A
	// transport.Server serving the sessions must be given the same Bus.
	Bus *engine.Bus
	// Harnesses run the sessions, by provider. A start naming a provider
	// not here is refused.
	Harnesses map[string]Harness
	// Presets are the presets a start may name, by name.
	Presets map[string]Preset
	// Logger hears about turns that fail and answers that are refused;
	// nil discards.
	Logger *slog.Logger
	// Now returns the time; nil means time.Now.
	Now func() time.Time
	// KeepTurns is how many ended turns a session's chat holds; 0 means
	// BackTurns. The older ones are forgotten in memory: the wake needs
	// only the running turn.
	KeepTurns int
	// Scrub, when set, takes every secret value it knows out of all the
	// sessions' agents hand out, and out of every action of their chats
	// before it is applied, published or followed (see scrub.go).
	Scrub Scrubber
	// ConfigDir, when set and Logs is nil, is where back sessions' logs
	// are kept (chatlog.Files, beside their rows, see FileRows).
	ConfigDir string
	// Logs keeps back sessions' logs (chatlog.Back), so that a LocalHost
	// started again, or another on the same logs, holds every back
	// session it held before: same URI, same chat, its latest turns. Nil
	// keeps them in files under ConfigDir; with neither, sessions live in
	// memory only.
	Logs chatlog.Logs
	// Shared says other hosts on other instances write the same Logs:
	// the replay at start then changes no log (a turn a log shows running
	// may be running elsewhere), and a host that takes a session over
	// reads it back first (Reload), under the lease the Waker holds. When
	// Logs is also a chatlog.Shared, the host follows the back sessions'
	// logs: it holds a copy of every back session another host runs,
	// published to its subscribers as it is written there, and takes no
	// client's action on such a copy but an answer, which it hands to
	// the host that runs the session through the log (see follow.go).
	Shared bool
}

// BackTurns is how many ended turns a LocalHost session's chat holds by
// default.
const BackTurns = 4

// LocalHost is a SessionHost that runs back sessions in this process, each
// on an Agent of its provider's Harness, and serves their state as AHP
// session and chat channels: Channel answers a engine.Host's question
// for their URIs. A session's owner (or a root principal) may subscribe to
// its channels and dispatch to its chat.
//
// With LocalConfig.ConfigDir, each back session (one whose _meta names
// BackSessionMeta) keeps a log, and a LocalHost that starts again holds
// every back session it held: a restored session opens its agent at its
// next turn, which the harness continues (acp loads the agent's session).
// Other sessions live in memory only.
type LocalHost struct {
	hub       *telemetry.Hub
	bus       *engine.Bus
	harnesses map[string]Harness
	presets   map[string]Preset
	log       *slog.Logger
	now       func() time.Time
	keep      int // ended turns a chat holds, at least 1
	scrub     Scrubber
	logs      chatlog.Logs // where back sessions' logs are, nil for none
	shared    bool         // LocalConfig.Shared
	// sh is logs when they are shared and can be followed: the host then
	// holds a copy of every back session and follows its log (follow.go).
	sh chatlog.Shared
	// id names this host in the lines it writes when it follows (By).
	id         string
	stopFollow context.CancelFunc
	following  sync.WaitGroup
	// swap serialises reading a session over (Reload, the follower): one
	// session is replaced by one of them at a time.
	swap sync.Mutex

	mu       sync.Mutex
	sessions map[string]*localSession // by session URI
	chats    map[string]*localSession // by chat URI
	closed   bool
	// creating names the sessions whose logs this host is making, which
	// the follower leaves to it; disposed, those it disposed of, which
	// the follower does not hold again on a late line.
	creating map[string]bool
	disposed map[string]bool

	turns sync.WaitGroup // the turns' goroutines, which Close waits for

	gate atomic.Pointer[ToolGate] // SetToolGate's, asked by every session's SessionInfo.Gate
}

var (
	_ SessionHost = (*LocalHost)(nil)
	_ Gated       = (*LocalHost)(nil)
	_ Lister      = (*LocalHost)(nil)
)

// SetToolGate sets the gate every session asks, those already open
// included: bot.New gives the service's.
func (h *LocalHost) SetToolGate(g ToolGate) { h.gate.Store(&g) }

// hostGate is the ToolGate a LocalHost's sessions are given: it asks the
// one SetToolGate set at each call, and answers as a host with none until
// then.
type hostGate struct{ h *LocalHost }

func (g hostGate) inner() ToolGate {
	if p := g.h.gate.Load(); p != nil {
		return *p
	}
	return nil
}

func (g hostGate) Allowed(ctx context.Context, s SessionInfo) (ToolSet, error) {
	if in := g.inner(); in != nil {
		return in.Allowed(ctx, s)
	}
	return DefaultToolPolicy().For(nil), nil
}

func (g hostGate) Call(ctx context.Context, s SessionInfo, name string, input json.RawMessage) (string, error) {
	if in := g.inner(); in != nil {
		return in.Call(ctx, s, name, input)
	}
	return "", fmt.Errorf("this host offers no %s", name)
}

// NewLocalHost returns a LocalHost running sessions on cfg's harnesses.
func NewLocalHost(cfg LocalConfig) (*LocalHost, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	bus := cfg.Bus
	if bus == nil {
		bus = engine.NewBus(log)
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	keep := cfg.KeepTurns
	if keep <= 0 {
		keep = BackTurns
	}
	h := &LocalHost{
		hub: cfg.Telemetry,
		bus: bus, harnesses: map[string]Harness{}, presets: map[string]Preset{}, log: log, now: now, keep: keep, scrub: cfg.Scrub,
		logs: cfg.Logs, shared: cfg.Shared, sessions: map[string]*localSession{}, chats: map[string]*localSession{},
		creating: map[string]bool{}, disposed: map[string]bool{},
	}
	for name, hr := range cfg.Harnesses {
		if name == "" || hr == nil {
			return nil, fmt.Errorf("wake: local host: harness %q is empty", name)
		}
		h.harnesses[name] = hr
	}
	newHostMeters(cfg.Telemetry, h)
	for name, p := range cfg.Presets {
		if _, ok := h.harnesses[p.Provider]; !ok {
			return nil, fmt.Errorf("wake: local host: preset %q names provider %q, which has no harness", name, p.Provider)
		}
		h.presets[name] = p
	}
	if h.logs == nil && cfg.ConfigDir != "" {
		h.logs = chatlog.NewFiles(cfg.ConfigDir)
	}
	if h.logs != nil {
		h.replay()
	}
	if sh, ok := h.logs.(chatlog.Shared); ok && cfg.Shared {
		h.sh, h.id = sh, newID()
		ctx, stop := context.WithCancel(context.Background())
		h.stopFollow = stop
		h.following.Go(func() { h.follow(ctx) })
	}
	return h, nil
}

// Bus is the bus the host publishes its sessions' actions on.
func (h *LocalHost) Bus() *engine.Bus { return h.bus }

// Providers returns the providers the host runs sessions on, sorted.
func (h *LocalHost) Providers() []string {
	out := make([]string, 0, len(h.harnesses))
	for p := range h.harnesses {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// Start starts a session of spec on its provider's harness.
func (h *LocalHost) Start(ctx context.Context, spec Spec) (string, error) {
	hr, provider, model, err := h.harness(spec)
	if err != nil {
		return "", err
	}
	uri := "ahp-session:/" + newID()
	s := h.newSession(uri, spec, hr, provider, model, h.now())
	s.fenceFrom(ctx)
	agent, err := hr.Open(ctx, s.info)
	if err != nil {
		return "", &RefusedError{Reason: err.Error(), Err: err}
	}
	s.agent = agent
	if err := h.add(s, provider, model); err != nil {
		agent.Close()
		return "", err
	}
	return uri, nil
}

// Restore holds the session at uri again, started from spec, when the host
// lost it (a log that could not be read back, a row older than the logs):
// its chat starts empty and its agent opens at its first turn, which the
// harness continues where it keeps the agent's session. A session the host
// holds is left as it is. A URI the host would not make, or a spec it
// cannot honour, is ErrRefused.
func (h *LocalHost) Restore(ctx context.Context, uri string, spec Spec) error {
	if !localURI(uri) {
		return refused("%q is not a session URI of this host", uri)
	}
	if _, ok := h.session(uri); ok {
		return nil
	}
	hr, provider, model, err := h.harness(spec)
	if err != nil {
		return err
	}
	s := h.newSession(uri, spec, hr, provider, model, h.now())
	s.fenceFrom(ctx)
	return h.add(s, provider, model)
}

// Reload reads the session at uri back from its log, over the copy the
// host holds: with shared logs, another host may have run it since. The
// copy held is dropped (its agent closed, its channels ended, so their
// subscribers take a new snapshot); the log's running turn, if any, is
// ended as interrupted and what waited taken back, in the log too, with
// the fence ctx carries. replaced is false when the copy held was the
// log's already and is kept: a copy that follows the log (shared logs
// that can be followed) is first brought up to it. A session with no log
// is ErrNoSession.
func (h *LocalHost) Reload(ctx context.Context, uri string, spec Spec) (replaced bool, err error) {
	key, ok := backLogKey(uri, spec.Meta)
	if !ok || h.logs == nil {
		return false, ErrNoSession
	}
	h.swap.Lock()
	defer h.swap.Unlock()
	if s, held := h.session(uri); held {
		// A copy that follows the log reads what it has not yet heard.
		s.catchUp(ctx)
		// No one else wrote the log since: the copy held is the log's.
		rctx, cancel := context.WithTimeout(ctx, logWait)
		raw, _, err := h.logs.Read(rctx, key)
		cancel()
		if err == nil {
			s.mu.Lock()
			c := s.chatState
			same := len(raw) == s.lines && !s.diverged && c.ActiveTurn == nil && c.SteeringMessage == nil && len(c.QueuedMessages) == 0
			s.mu.Unlock()
			if same {
				s.fenceFrom(ctx)
				return false, nil
			}
		}
	}
	h.mu.Lock()
	old := h.sessions[uri]
	if old != nil {
		delete(h.sessions, uri)
		delete(h.chats, old.chat)
	}
	h.mu.Unlock()
	if old != nil {
		old.dispose()
	}
	err = h.replayLog(ctx, key, true)
	if errors.Is(err, iofs.ErrNotExist) {
		return old != nil, fmt.Errorf("%w: %v", ErrNoSession, err)
	}
	return old != nil, err
}

// Idle returns once the session's chat has no running turn and nothing
// waiting, or the session is gone, or ctx ends.
func (h *LocalHost) Idle(ctx context.Context, uri string) error {
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	state, ch, err := h.Follow(fctx, uri)
	if errors.Is(err, ErrNoSession) {
		return nil
	}
	if err != nil {
		return err
	}
	for state.ActiveTurn != nil || state.SteeringMessage != nil || len(state.QueuedMessages) > 0 {
		select {
		case a, ok := <-ch:
			if !ok {
				return ctx.Err()
			}
			state = ahp.ApplyChat(state, a)
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// harness returns the harness, provider and model spec starts on.
func (h *LocalHost) harness(spec Spec) (Harness, string, string, error) {
	provider, model := spec.Provider, spec.Model
	if spec.Preset != "" {
		p, ok := h.presets[spec.Preset]
		if !ok {
			return nil, "", "", refused("no preset %q", spec.Preset)
		}
		provider, model = p.Provider, p.Model
	}
	hr, ok := h.harnesses[provider]
	if !ok {
		return nil, "", "", refused("no agent for provider %q", provider)
	}
	if spec.Dir == "" {
		return nil, "", "", refused("a session needs a folder to work in")
	}
	return hr, provider, model, nil
}

// newSession is the session uri of spec as it begins, with no agent yet.
func (h *LocalHost) newSession(uri string, spec Spec, hr Harness, provider, model string, now time.Time) *localSession {
	info := SessionInfo{URI: uri, Provider: provider, Model: model, Dir: spec.Dir, Title: spec.Title, SystemPrompt: spec.SystemPrompt,
		Owner: spec.Owner, Meta: maps.Clone(spec.Meta), Gate: hostGate{h}}
	if spec.Client != nil {
		info.Tools = slices.Clone([]ahp.ToolDefinition(spec.Client.Tools))
	}
	chat := ahp.DefaultChatURI(uri)
	s := &localSession{h: h, uri: uri, chat: chat, spec: spec, hr: hr, info: info, feed: feed.New[ahp.Action](),
		createdAt: ahp.FormatTime(now), waits: map[string]chan ahp.Action{}}
	s.state = ahp.SessionState{
		SessionMetadata: ahp.SessionMetadata{
			Provider: provider, Title: spec.Title, Status: ahp.StatusIdle,
			WorkingDirectories: []string{(&url.URL{Scheme: "file", Path: spec.Dir}).String()},
		},
		Lifecycle:     ahp.LifecycleReady,
		ActiveClients: ahp.List[ahp.SessionActiveClient]{},
		DefaultChat:   chat,
		Meta:          spec.Meta,
	}
	if spec.Client != nil {
		s.state.ActiveClients = append(s.state.ActiveClients, *spec.Client)
	}
	summary := ahp.ChatSummary{Resource: chat, Title: spec.Title, Status: ahp.StatusIdle, ModifiedAt: s.createdAt}
	s.state.Chats = ahp.List[ahp.ChatSummary]{summary}
	s.chatState = ahp.ChatState{ChatSummary: summary, Turns: ahp.List[ahp.Turn]{}}
	return s
}

// add writes a new session's log, when it keeps one, and holds it. A log
// that cannot be written is reported; the session then lives in memory
// only.
func (h *LocalHost) add(s *localSession, provider, model string) error {
	s.here = true
	if key, ok := backLogKey(s.uri, s.spec.Meta); ok && h.logs != nil {
		h.mu.Lock()
		creating := h.creating[s.uri]
		h.creating[s.uri] = true
		delete(h.disposed, s.uri)
		h.mu.Unlock()
		if creating {
			return refused("the host is making %s already", s.uri)
		}
		defer func() {
			h.mu.Lock()
			delete(h.creating, s.uri)
			h.mu.Unlock()
		}()
		if err := h.createLog(key, s, provider, model); err != nil {
			h.log.Warn("wake: a back session's log could not be made; a restart will not hold the session", "log", key, "session", s.uri, "err", err)
		} else {
			s.key, s.logged, s.lines = key, true, 1
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed || h.sessions[s.uri] != nil {
		if s.logged {
			h.removeLog(s.key)
		}
		if h.closed {
			return refused("the host is closed")
		}
		return refused("the host holds %s already", s.uri)
	}
	h.sessions[s.uri] = s
	h.chats[s.chat] = s
	return nil
}

// Has reports whether the host holds the session.
func (h *LocalHost) Has(ctx context.Context, session string) (bool, error) {
	_, ok := h.session(session)
	return ok, nil
}

func (h *LocalHost) session(uri string) (*localSession, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s, ok := h.sessions[uri]
	return s, ok
}

// Dispose ends the session: its running turn is stopped, its agent closed
// and its channels ended.
func (h *LocalHost) Dispose(ctx context.Context, session string) error {
	h.mu.Lock()
	s, ok := h.sessions[session]
	if ok {
		delete(h.sessions, session)
		delete(h.chats, s.chat)
		if h.sh != nil {
			h.disposed[session] = true
		}
	}
	h.mu.Unlock()
	if !ok {
		return ErrNoSession
	}
	s.dispose()
	if s.logged {
		h.removeLog(s.key)
	}
	return nil
}

var (
	_ BotForgetter   = (*LocalHost)(nil)
	_ SessionFolders = (*LocalHost)(nil)
)

// SessionFolder returns the folder the session it holds works in.
func (h *LocalHost) SessionFolder(session string) (string, bool) {
	s, ok := h.session(session)
	if !ok {
		return "", false
	}
	return s.spec.Dir, true
}

// ForgetBot disposes of the back sessions of bot, a deleted bot, that the
// host holds, ending their agents, then has every harness that keeps
// something of the bot's own (BotForgetter) remove it.
func (h *LocalHost) ForgetBot(ctx context.Context, bot string) error {
	h.mu.Lock()
	var uris []string
	for uri, s := range h.sessions {
		if b, _, _, ok := BackSession(s.spec.Meta); ok && b == bot {
			uris = append(uris, uri)
		}
	}
	h.mu.Unlock()
	for _, uri := range uris {
		h.Dispose(ctx, uri)
	}
	var errs []error
	for _, hr := range h.harnesses {
		if f, ok := hr.(BotForgetter); ok {
			errs = append(errs, f.ForgetBot(ctx, bot))
		}
	}
	return errors.Join(errs...)
}

// removeLog removes a back session's log, reporting a failure.
func (h *LocalHost) removeLog(key chatlog.Key) {
	ctx, cancel := context.WithTimeout(context.Background(), logWait)
	defer cancel()
	if err := h.logs.Remove(ctx, key); err != nil {
		h.log.Warn("wake: a disposed back session's log could not be removed", "log", key, "err", err)
	}
}

// Close ends every session and refuses new ones, and returns once every
// turn it ran has returned; the sessions' logs stay, so a LocalHost
// started again holds them. It is idempotent.
func (h *LocalHost) Close() error {
	if h.stopFollow != nil {
		h.stopFollow()
		h.following.Wait()
	}
	h.mu.Lock()
	h.closed = true
	all := make([]*localSession, 0, len(h.sessions))
	for _, s := range h.sessions {
		all = append(all, s)
	}
	h.sessions = map[string]*localSession{}
	h.chats = map[string]*localSession{}
	h.mu.Unlock()
	for _, s := range all {
		s.dispose()
	}
	h.turns.Wait()
	return nil
}

// Send queues m on the session's chat.
func (h *LocalHost) Send(ctx context.Context, session string, m Pending) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s, ok := h.session(session)
	if !ok {
		return ErrNoSession
	}
	s.fenceFrom(ctx)
	if h.hub.Tracing() {
		s.mu.Lock()
		s.parent = trace.SpanContextFromContext(ctx)
		s.mu.Unlock()
	}
	return s.dispatch(ahp.PendingMessageSet(m.Kind, m.ID, m.Message), nil)
}

// Dispatch applies a client's action to the session's chat.
func (h *LocalHost) Dispatch(ctx context.Context, session string, a ahp.Action) error {
	s, ok := h.session(session)
	if !ok {
		return ErrNoSession
	}
	return s.dispatch(a, nil)
}

// Follow returns the session chat's state and the actions applied to it
// from then on.
func (h *LocalHost) Follow(ctx context.Context, session string) (ahp.ChatState, <-chan ahp.Action, error) {
	s, ok := h.session(session)
	if !ok {
		return ahp.ChatState{}, nil, ErrNoSession
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gone {
		return ahp.ChatState{}, nil, ErrNoSession
	}
	return s.chatState, s.feed.Subscribe(ctx), nil
}

// Channel returns the session or chat channel at uri for a engine.Host
// to serve: the session's owner, or a root principal, may subscribe to it
// and dispatch to the chat. Any other URI is errcode.NotFound.
func (h *LocalHost) Channel(ctx context.Context, c engine.Caller, uri string) (engine.Channel, error) {
	h.mu.Lock()
	s, isSession := h.sessions[uri]
	var chat *localSession
	if !isSession {
		chat = h.chats[uri]
	}
	h.mu.Unlock()
	switch {
	case isSession:
		if !c.Principal.Any() && !c.Principal.Owns(s.spec.Owner) {
			return nil, errcode.New(errcode.PermissionDenied, "Permission denied: %s", uri)
		}
		return sessionChannel{s}, nil
	case chat != nil:
		if !c.Principal.Any() && !c.Principal.Owns(chat.spec.Owner) {
			return nil, errcode.New(errcode.PermissionDenied, "Permission denied: %s", uri)
		}
		return chatChannel{chat}, nil
	}
	return nil, errcode.New(errcode.NotFound, "no channel %s", uri)
}

// BackSessions returns every back session the host holds: copies it
// follows included.
func (h *LocalHost) BackSessions() []Held {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]Held, 0, len(h.sessions))
	for uri, s := range h.sessions {
		if bot, person, _, ok := BackSession(s.spec.Meta); ok {
			out = append(out, Held{Session: uri, Bot: bot, Person: person})
		}
	}
	return out
}

// HeldAt returns the back session whose session or chat URI is uri.
func (h *LocalHost) HeldAt(uri string) (Held, bool) {
	h.mu.Lock()
	s := h.sessions[uri]
	if s == nil {
		s = h.chats[uri]
	}
	h.mu.Unlock()
	if s == nil {
		return Held{}, false
	}
	bot, person, _, ok := BackSession(s.spec.Meta)
	return Held{Session: s.uri, Bot: bot, Person: person}, ok
}

// Summaries returns the listing rows of the sessions owned by owner (every
// session for ""), newest first.
func (h *LocalHost) Summaries(owner string) []ahp.SessionSummary {
	h.mu.Lock()
	all := make([]*localSession, 0, len(h.sessions))
	for _, s := range h.sessions {
		if owner == "" || s.spec.Owner == owner {
			all = append(all, s)
		}
	}
	h.mu.Unlock()
	out := make([]ahp.SessionSummary, 0, len(all))
	for _, s := range all {
		s.mu.Lock()
		st, cs := s.state, s.chatState
		s.mu.Unlock()
		meta := st.SessionMetadata
		meta.Status = cs.Status
		out = append(out, ahp.SessionSummary{
			SessionMetadata: meta, Resource: s.uri, CreatedAt: s.createdAt, ModifiedAt: cs.ModifiedAt,
			Meta: st.Meta, DefaultChat: s.chat,
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ModifiedAt > out[j].ModifiedAt })
	return out
}

// localSession is one session LocalHost runs.
type localSession struct {
	h    *LocalHost
	uri  string
	chat string
	spec Spec
	hr   Harness
	info SessionInfo // what the agent is opened with
	feed *feed.Feed[ahp.Action]
	// createdAt is when the session started (ISO 8601).
	createdAt string
	// key is the session's log's when logged; an unlogged session keeps
	// none.
	key    chatlog.Key
	logged bool
	// fence is the lease token its log's writes carry, when a Waker
	// holding a lease handed it work (lease.WithFence); set under mu.
	fence  lease.Fence
	fenced bool
	// lines is how many lines its log holds as far as this host knows:
	// read back, or written; set under mu.
	lines int
	// here says this host writes the session's log (it started it, read
	// it back to continue it, or a Waker holding its lease handed it
	// work); with shared logs a session not here is a copy that follows
	// the log another host writes, and takes clients' answers alone
	// (follow.go). diverged says a
	// write to the log failed: the copy holds a line the log does not.
	// Both set under mu.
	here     bool
	diverged bool

	mu         sync.Mutex
	state      ahp.SessionState
	chatState  ahp.ChatState
	sessionSeq int64
	chatSeq    int64
	turn       *localTurn
	waits      map[string]chan ahp.Action // tool call or request id → its answer
	gone       bool
	// agent is the session's agent, nil until a restored session's first
	// turn opens it.
	agent    Agent
	logError bool // an append failed and was reported
	// parent is the span of the wake that sent the last message, the
	// parent of the next turn's, with traces on.
	parent trace.SpanContext
}

// localTurn is the turn a session's agent runs.
type localTurn struct {
	id      string
	started time.Time
	cancel  context.CancelFunc
	stopped bool                     // the turn was cancelled; nothing more is emitted for it
	reply   string                   // the reply's markdown part, once opened
	reason  string                   // the reasoning part, once opened
	tools   map[string]*reportedTool // the agent's own tool calls by the agent's id
}

// reportedTool is one of the agent's own tool calls shown in the turn.
type reportedTool struct {
	id    string // the call's tool call id in the chat
	title string
	done  bool
}

// dispose stops the running turn, ends the channels and closes the agent.
// fenceFrom takes the fence ctx carries, if any, for the session's later
// log writes.
func (s *localSession) fenceFrom(ctx context.Context) {
	if f, ok := lease.FenceFrom(ctx); ok {
		s.mu.Lock()
		s.fence, s.fenced, s.here = f, true, true
		s.mu.Unlock()
	}
}

// logCtx is a context for one log write, with the session's fence. Called
// with s.mu held.
func (s *localSession) logCtxLocked() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(context.Background(), logWait)
	if s.fenced {
		ctx = lease.WithFence(ctx, s.fence)
	}
	return ctx, cancel
}

func (s *localSession) dispose() {
	s.mu.Lock()
	if s.gone {
		s.mu.Unlock()
		return
	}
	s.gone = true
	if t := s.turn; t != nil {
		t.stopped = true
		t.cancel()
	}
	agent := s.agent
	s.mu.Unlock()
	s.feed.Close()
	s.h.bus.End(s.uri)
	s.h.bus.End(s.chat)
	if agent == nil {
		return
	}
	if err := agent.Close(); err != nil {
		s.h.log.Warn("wake: closing an agent failed", "session", s.uri, "err", err)
	}
}

// emitChatLocked applies a to the chat, publishes it and tells followers;
// the session's catalogue follows the chat's status. The chat holds its
// latest ended turns only: a snapshot has those, with no turnsNextCursor,
// as the older ones are gone. It reports false when a is an answer that
// another host's answer, logged first, made moot: a is then neither
// logged nor applied. Called with s.mu held.
func (s *localSession) emitChatLocked(a ahp.Action, origin *engine.Origin) bool {
	a = scrubAction(s.h.scrub, a)
	if !s.logLocked(backChat, a) {
		return false
	}
	s.showChatLocked(a, origin)
	return true
}

// showChatLocked applies a to the chat, publishes it and tells
// followers, and updates the session's catalogue when the chat's status
// changed: what emitChatLocked does once a is logged, and what a copy
// does with a line another host wrote. Called with s.mu held.
func (s *localSession) showChatLocked(a ahp.Action, origin *engine.Origin) {
	prev := s.chatState
	s.applyChatLocked(a)
	seq, err := s.h.bus.Publish(s.chat, engine.Event{Action: a, Origin: origin})
	if err != nil {
		s.h.log.Error("wake: action did not publish", "chat", s.chat, "err", err)
	} else {
		s.chatSeq = seq
	}
	s.feed.Publish(a)
	if prev.Status != s.chatState.Status || prev.ModifiedAt != s.chatState.ModifiedAt {
		st, mod := s.chatState.Status, s.chatState.ModifiedAt
		s.emitSessionLocked(ahp.ChatUpdated(s.chat, ahp.PartialChatSummary{Status: &st, ModifiedAt: &mod}), nil)
	}
}

// applyChatLocked applies a to the chat's state, keeping its latest ended
// turns. Called with s.mu held.
func (s *localSession) applyChatLocked(a ahp.Action) {
	s.chatState = ahp.ApplyChat(s.chatState, a)
	if n := len(s.chatState.Turns) - s.h.keep; n > 0 {
		s.chatState.Turns = slices.Clone(s.chatState.Turns[n:]) // a copy, so the forgotten turns can be freed
	}
}

// emitSessionLocked applies a to the session and publishes it; a client's
// action (origin set) is logged. Called with s.mu held.
func (s *localSession) emitSessionLocked(a ahp.Action, origin *engine.Origin) {
	a = scrubAction(s.h.scrub, a)
	if origin != nil {
		s.logLocked(backSession, a)
	}
	s.showSessionLocked(a, origin)
}

// showSessionLocked applies a to the session and publishes it. Called
// with s.mu held.
func (s *localSession) showSessionLocked(a ahp.Action, origin *engine.Origin) {
	s.state = ahp.ApplySession(s.state, a)
	seq, err := s.h.bus.Publish(s.uri, engine.Event{Action: a, Origin: origin})
	if err != nil {
		s.h.log.Error("wake: action did not publish", "session", s.uri, "err", err)
		return
	}
	s.sessionSeq = seq
}

// refused is a refusal of the host, for reason (a format and its args).
func refused(format string, args ...any) error {
	return &RefusedError{Reason: fmt.Sprintf(format, args...)}
}

// dispatch validates and applies a client's action to the chat; origin is
// nil for an in-process caller.
func (s *localSession) dispatch(a ahp.Action, origin *engine.Origin) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gone {
		return ErrNoSession
	}
	if s.elsewhereLocked() != nil && answerFor(a) != "" && origin != nil {
		// A client's answer; an in-process caller (the Waker of this
		// instance, following a turn another runs) acts only where the
		// session runs.
		return s.answerElsewhereLocked(a, origin)
	}
	if err := s.elsewhereLocked(); err != nil {
		return err
	}
	cs := s.chatState
	active := cs.ActiveTurn
	switch b := a.Body.(type) {
	case *ahp.ChatTurnStartedAction:
		if b.TurnID == "" || b.Message.Origin.Kind != ahp.MessageUser {
			return refused("a turn a client starts needs a turnId and a user's message")
		}
		if active != nil || s.turn != nil {
			return refused("a turn is in progress")
		}
		if b.QueuedMessageID != "" {
			return refused("the host consumes queued messages itself")
		}
		s.emitChatLocked(a, origin)
		s.runLocked(b.TurnID, b.Message)
		return nil
	case *ahp.ChatTurnCancelledAction:
		if active == nil || active.ID != b.TurnID {
			return refused("turn %q is not in progress", b.TurnID)
		}
		if origin == nil && b.Duration == 0 {
			a = ahp.TurnCancelled(b.TurnID, s.durationLocked())
		}
		if t := s.turn; t != nil && t.id == b.TurnID {
			t.stopped = true
			t.cancel()
		}
		s.emitChatLocked(a, origin)
		s.turn = nil
		s.nextLocked()
		return nil
	case *ahp.ChatPendingMessageSetAction:
		if b.ID == "" || (b.Kind != ahp.PendingQueued && b.Kind != ahp.PendingSteering) {
			return refused("a pending message needs an id and the kind queued or steering")
		}
		s.emitChatLocked(a, origin)
		s.nextLocked()
		return nil
	case *ahp.ChatPendingMessageRemovedAction:
		switch {
		case b.Kind == ahp.PendingSteering && cs.SteeringMessage != nil && cs.SteeringMessage.ID == b.ID:
		case b.Kind == ahp.PendingQueued && slices.ContainsFunc(cs.QueuedMessages, func(m ahp.PendingMessage) bool { return m.ID == b.ID }):
		default:
			return refused("no %s message %q is waiting", b.Kind, b.ID)
		}
		s.emitChatLocked(a, origin)
		return nil
	case *ahp.ChatQueuedMessagesReorderedAction, *ahp.ChatDraftChangedAction,
		*ahp.ChatIsReadChangedAction, *ahp.ChatIsArchivedChangedAction:
		s.emitChatLocked(a, origin)
		return nil
	case *ahp.ChatInputAnswerChangedAction, *ahp.ChatInputCompletedAction, *ahp.ChatToolCallConfirmedAction, *ahp.ChatToolCallCompleteAction:
		if err := s.answerErrLocked(a, origin); err != nil {
			return err
		}
		if s.emitChatLocked(a, origin) {
			s.deliverAnswerLocked(a)
		}
		return nil
	}
	return refused("this chat does not take %s", a.Type)
}

// dispatchSession applies a client's action to the session channel.
func (s *localSession) dispatchSession(a ahp.Action, origin *engine.Origin) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gone {
		return ErrNoSession
	}
	if err := s.elsewhereLocked(); err != nil {
		return err
	}
	switch a.Body.(type) {
	case *ahp.SessionTitleChangedAction, *ahp.SessionIsReadChangedAction, *ahp.SessionIsArchivedChangedAction:
		s.emitSessionLocked(a, origin)
		return nil
	}
	return refused("this session does not take %s", a.Type)
}

func (s *localSession) deliverLocked(id string, a ahp.Action) {
	if ch, ok := s.waits[id]; ok {
		delete(s.waits, id)
		ch <- a
	}
}

func (s *localSession) durationLocked() time.Duration {
	if s.turn != nil {
		return s.h.now().Sub(s.turn.started)
	}
	if at := s.chatState.ActiveTurn; at != nil {
		if t, err := time.Parse(time.RFC3339Nano, at.StartedAt); err == nil {
			return s.h.now().Sub(t)
		}
	}
	return 0
}

// nextLocked starts the next waiting message when the chat is idle: the
// steering message first, then the queue.
func (s *localSession) nextLocked() {
	if s.turn != nil || s.gone || s.chatState.ActiveTurn != nil {
		return
	}
	if id, msg, ok := s.startWaitingLocked(); ok {
		s.runLocked(id, msg)
	}
}

// startWaitingLocked starts the turn of the next waiting message, the
// steering message first, then the queue, and returns its id and message;
// ok is false when none waits.
func (s *localSession) startWaitingLocked() (id string, msg ahp.Message, ok bool) {
	var next *ahp.PendingMessage
	switch {
	case s.chatState.SteeringMessage != nil:
		next = s.chatState.SteeringMessage
	case len(s.chatState.QueuedMessages) > 0:
		next = &s.chatState.QueuedMessages[0]
	default:
		return "", ahp.Message{}, false
	}
	id = newID()
	s.emitChatLocked(ahp.TurnStartedFromQueue(id, s.h.now(), next.ID, next.Message), nil)
	return id, next.Message, true
}

// runLocked runs the agent's turn id in a goroutine of its own, which the
// host's Close waits for. A session not gone is held by the host, so no
// turn starts once Close has disposed every session.
func (s *localSession) runLocked(id string, msg ahp.Message) {
	ctx, cancel := context.WithCancel(traced(context.Background(), s.parent))
	t := &localTurn{id: id, started: s.h.now(), cancel: cancel}
	s.turn = t
	s.h.turns.Add(1)
	go func() {
		defer s.h.turns.Done()
		s.run(ctx, t, msg)
	}()
}

func (s *localSession) run(ctx context.Context, t *localTurn, msg ahp.Message) {
	w := &work{s: s, t: t, msg: msg}
	ctx = WithProgress(ctx, w.progress)
	ctx, op := s.h.hub.Begin(ctx, telemetry.Cell{}, instr, "back turn", attribute.String("bots.agent", s.info.Provider))
	agent, err := s.open(ctx)
	if err == nil {
		err = runScrubbed(ctx, agent, w, s.h.scrub)
	}
	op.End(err)
	t.cancel()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.turn == t || s.turn == nil {
		s.showActivityLocked("")
	}
	if t.stopped || s.turn != t {
		return
	}
	d := s.h.now().Sub(t.started)
	if err != nil {
		s.h.log.Info("wake: a back turn failed", "session", s.uri, "turn", t.id, "err", err)
		s.emitChatLocked(ahp.TurnFailed(t.id, d, ahp.ErrorInfo{ErrorType: "agentError", Message: err.Error()}, false), nil)
		if errors.Is(err, ErrNotStarted) {
			s.failWaitingLocked(err)
		}
	} else {
		s.emitChatLocked(ahp.TurnComplete(t.id, d), nil)
	}
	s.turn = nil
	s.nextLocked()
}

// open returns the session's agent, opening it on the first turn of a
// restored session. A session disposed meanwhile closes the agent it
// opened.
func (s *localSession) open(ctx context.Context) (Agent, error) {
	s.mu.Lock()
	agent := s.agent
	s.mu.Unlock()
	if agent != nil {
		return agent, nil
	}
	agent, err := s.hr.Open(ctx, s.info)
	if err != nil {
		return nil, fmt.Errorf("the agent did not start: %w", err)
	}
	s.mu.Lock()
	gone := s.gone
	if !gone {
		s.agent = agent
	}
	s.mu.Unlock()
	if gone {
		agent.Close()
		return nil, ErrNoSession
	}
	return agent, nil
}

// showActivityLocked shows text as the chat's activity ("" clears it):
// what a start of the agent during a turn is doing. It is published and
// not logged: it means nothing once the turn is over. Called with s.mu
// held.
func (s *localSession) showActivityLocked(text string) {
	if s.gone || s.chatState.Activity == text {
		return
	}
	s.showChatLocked(scrubAction(s.h.scrub, ahp.ChatActivityChanged(text)), nil)
}

// runAgent runs one turn, turning a panic of the agent into an error.
func runAgent(ctx context.Context, a Agent, w Work) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the agent panicked: %v", r)
		}
	}()
	return a.Turn(ctx, w)
}

// work is what an agent does one turn through.
type work struct {
	s   *localSession
	t   *localTurn
	msg ahp.Message
}

func (w *work) TurnID() string       { return w.t.id }
func (w *work) Message() ahp.Message { return w.msg }

// liveLocked reports whether the turn still runs. Called with s.mu held.
func (w *work) liveLocked() bool { return !w.s.gone && w.s.turn == w.t && !w.t.stopped }

func (w *work) Reply(text string) {
	if text == "" {
		return
	}
	s := w.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if !w.liveLocked() {
		return
	}
	if w.t.reply == "" {
		w.t.reply = newID()
		s.emitChatLocked(ahp.AppendPart(w.t.id, ahp.MarkdownResponse(w.t.reply, text)), nil)
		return
	}
	s.emitChatLocked(ahp.Delta(w.t.id, w.t.reply, text), nil)
}

var errTurnOver = errors.New("the turn is over")

// progress shows what a start of the agent during the turn is doing (a
// restored session's first turn, or a turn after the agent's process
// ended) as the chat's activity.
func (w *work) progress(text string) {
	s := w.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if w.liveLocked() {
		s.showActivityLocked(text)
	}
}

// Notify shows a notice of the harness in the turn, as a system
// notification.
func (w *work) Notify(text string) {
	if text == "" {
		return
	}
	s := w.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if w.liveLocked() {
		s.emitChatLocked(ahp.AppendPart(w.t.id, ahp.ResponsePart{SystemNotification: &ahp.SystemNotificationPart{Content: ahp.Plain(text)}}), nil)
	}
}

var (
	_ Reasoner     = (*work)(nil)
	_ ToolReporter = (*work)(nil)
	_ Notifier     = (*work)(nil)
)

// Reason streams text into the turn's reasoning part.
func (w *work) Reason(text string) {
	if text == "" {
		return
	}
	s := w.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if !w.liveLocked() {
		return
	}
	if w.t.reason == "" {
		w.t.reason = newID()
		s.emitChatLocked(ahp.AppendPart(w.t.id, ahp.ReasoningResponse(w.t.reason, text)), nil)
		return
	}
	s.emitChatLocked(ahp.Reasoning(w.t.id, w.t.reason, text), nil)
}

// ReportTool shows one of the agent's own tool calls in the turn: started
// and running at its first report, completed or failed when its status
// says so. Reports of a call already ended are dropped.
func (w *work) ReportTool(r ToolReport) {
	if r.ID == "" {
		return
	}
	s := w.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if !w.liveLocked() {
		return
	}
	if w.t.tools == nil {
		w.t.tools = map[string]*reportedTool{}
	}
	rt := w.t.tools[r.ID]
	if rt == nil {
		rt = &reportedTool{id: newID(), title: r.Title}
		if rt.title == "" {
			rt.title = r.ID
		}
		w.t.tools[r.ID] = rt
		name := "agent_tool"
		if r.Kind != "" {
			name = "agent_" + r.Kind
		}
		s.emitChatLocked(ahp.ToolCallStart(w.t.id, rt.id, name, rt.title), nil)
		ready := &ahp.ChatToolCallReadyAction{TurnID: w.t.id, ToolCallID: rt.id, InvocationMessage: ahp.Plain(rt.title), Confirmed: ahp.ConfirmedNotNeeded}
		if r.Input != "" {
			ready.ToolInput = &ahp.ToolInput{Text: r.Input}
		}
		s.emitChatLocked(ahp.NewAction(ready), nil)
	} else if r.Title != "" && r.Title != rt.title && !rt.done {
		rt.title = r.Title
		msg := ahp.Plain(r.Title)
		s.emitChatLocked(ahp.NewAction(&ahp.ChatToolCallDeltaAction{TurnID: w.t.id, ToolCallID: rt.id, InvocationMessage: &msg}), nil)
	}
	if rt.done || (r.Status != ToolCompleted && r.Status != ToolFailed) {
		return
	}
	rt.done = true
	res := ahp.ToolCallResult{Success: r.Status == ToolCompleted, PastTenseMessage: ahp.Plain(rt.title)}
	if r.Output != "" {
		res.Content = []ahp.ToolResultContent{ahp.TextContent(r.Output)}
	}
	if !res.Success {
		res.Error = &ahp.ToolError{Message: rt.title + " failed"}
	}
	s.emitChatLocked(ahp.ToolCallComplete(w.t.id, rt.id, res), nil)
}

func (w *work) CallTool(ctx context.Context, name string, input json.RawMessage) (ahp.ToolCallResult, error) {
	s := w.s
	s.mu.Lock()
	if !w.liveLocked() {
		s.mu.Unlock()
		return ahp.ToolCallResult{}, errTurnOver
	}
	id := newID()
	var client *ahp.SessionActiveClient
	var display string
	if c := s.spec.Client; c != nil {
		for _, d := range c.Tools {
			if d.Name == name {
				client, display = c, d.Title
			}
		}
	}
	if display == "" {
		display = name
	}
	start := &ahp.ChatToolCallStartAction{TurnID: w.t.id, ToolCallID: id, ToolName: name, DisplayName: display}
	if client != nil {
		start.Contributor = &ahp.ToolCallContributor{Kind: ahp.ContributorClient, ClientID: client.ClientID}
	}
	s.emitChatLocked(ahp.NewAction(start), nil)
	invocation := ahp.Plain("Calling " + display)
	toolInput := &ahp.ToolInput{Text: string(input)}
	if slices.Contains(s.spec.Deny, name) {
		s.emitChatLocked(ahp.NewAction(&ahp.ChatToolCallReadyAction{TurnID: w.t.id, ToolCallID: id, InvocationMessage: invocation, ToolInput: toolInput}), nil)
		reason := ahp.Plain("The session's deny list refuses " + name + ".")
		s.emitChatLocked(ahp.NewAction(&ahp.ChatToolCallConfirmedAction{TurnID: w.t.id, ToolCallID: id, Reason: ahp.CancelDenied, ReasonMessage: &reason}), nil)
		s.mu.Unlock()
		return ahp.ToolCallResult{}, ErrDenied
	}
	s.emitChatLocked(ahp.NewAction(&ahp.ChatToolCallReadyAction{TurnID: w.t.id, ToolCallID: id, InvocationMessage: invocation, ToolInput: toolInput, Confirmed: ahp.ConfirmedNotNeeded}), nil)
	if client == nil {
		res := ahp.ToolCallResult{Success: false, PastTenseMessage: ahp.Plain("No tool " + name), Error: &ahp.ToolError{Message: "no tool named " + name}}
		s.emitChatLocked(ahp.ToolCallComplete(w.t.id, id, res), nil)
		s.mu.Unlock()
		return res, nil
	}
	ch := make(chan ahp.Action, 1)
	s.waits[id] = ch
	s.mu.Unlock()
	select {
	case a := <-ch:
		return a.Body.(*ahp.ChatToolCallCompleteAction).Result, nil
	case <-ctx.Done():
		s.mu.Lock()
		defer s.mu.Unlock()
		if _, waiting := s.waits[id]; waiting {
			delete(s.waits, id)
			if w.liveLocked() { // abandoned: the call ends now, as a withdrawn question does
				s.emitChatLocked(ahp.ToolCallComplete(w.t.id, id, ahp.ToolCallResult{
					Success: false, PastTenseMessage: ahp.Plain("Abandoned " + display), Error: &ahp.ToolError{Message: "the call was abandoned"},
				}), nil)
			}
		}
		return ahp.ToolCallResult{}, ctx.Err()
	}
}

func (w *work) Ask(ctx context.Context, questions []ahp.ChatInputQuestion) (ahp.InputResponse, map[string]ahp.ChatInputAnswer, error) {
	s := w.s
	s.mu.Lock()
	if !w.liveLocked() {
		s.mu.Unlock()
		return "", nil, errTurnOver
	}
	id := newID()
	s.emitChatLocked(ahp.InputRequested(ahp.ChatInputRequest{ID: id, Questions: questions}), nil)
	ch := make(chan ahp.Action, 1)
	s.waits[id] = ch
	s.mu.Unlock()
	select {
	case a := <-ch:
		b := a.Body.(*ahp.ChatInputCompletedAction)
		return b.Response, b.Answers, nil
	case <-ctx.Done():
		s.mu.Lock()
		defer s.mu.Unlock()
		if _, waiting := s.waits[id]; waiting {
			delete(s.waits, id)
			if w.liveLocked() {
				s.emitChatLocked(ahp.InputCompleted(id, ahp.InputCancel, nil), nil) // withdrawn
			}
		}
		return "", nil, ctx.Err()
	}
}

func (w *work) Approve(ctx context.Context, ap Approval) (bool, error) {
	s := w.s
	s.mu.Lock()
	if !w.liveLocked() {
		s.mu.Unlock()
		return false, errTurnOver
	}
	id := newID()
	display := ap.DisplayName
	if display == "" {
		display = ap.ToolName
	}
	s.emitChatLocked(ahp.ToolCallStart(w.t.id, id, ap.ToolName, display), nil)
	title := ahp.Plain("Allow " + display + "?")
	s.emitChatLocked(ahp.NewAction(&ahp.ChatToolCallReadyAction{
		TurnID: w.t.id, ToolCallID: id, InvocationMessage: ahp.Plain(ap.Invocation),
		ToolInput: &ahp.ToolInput{Text: ap.Input}, ConfirmationTitle: &title,
	}), nil)
	ch := make(chan ahp.Action, 1)
	s.waits[id] = ch
	s.mu.Unlock()
	select {
	case a := <-ch:
		b := a.Body.(*ahp.ChatToolCallConfirmedAction)
		if !b.Approved {
			return false, nil
		}
		s.mu.Lock()
		if w.liveLocked() {
			s.emitChatLocked(ahp.ToolCallComplete(w.t.id, id, ahp.ToolCallResult{Success: true, PastTenseMessage: ahp.Plain("Ran " + display)}), nil)
		}
		s.mu.Unlock()
		return true, nil
	case <-ctx.Done():
		s.mu.Lock()
		defer s.mu.Unlock()
		if _, waiting := s.waits[id]; waiting {
			delete(s.waits, id)
			if w.liveLocked() { // withdrawn
				s.emitChatLocked(ahp.ToolCallComplete(w.t.id, id, ahp.ToolCallResult{
					Success: false, PastTenseMessage: ahp.Plain("Withdrawn"), Error: &ahp.ToolError{Message: "the request was withdrawn"},
				}), nil)
			}
		}
		return false, ctx.Err()
	}
}

// sessionChannel serves a session's state.
type sessionChannel struct{ s *localSession }

func (c sessionChannel) URI() string { return c.s.uri }

func (c sessionChannel) Subscribe(ctx context.Context, sub *engine.Subscriber) (engine.Snapshot, error) {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	return engine.Snapshot{State: c.s.state, Seq: c.s.sessionSeq}, nil
}

func (c sessionChannel) Dispatch(ctx context.Context, d engine.Dispatch) error {
	a, err := decodeAction(d.Action)
	if err != nil {
		return err
	}
	origin := d.Origin
	return wireError(c.s.dispatchSession(a, &origin))
}

// chatChannel serves a session's chat.
type chatChannel struct{ s *localSession }

func (c chatChannel) URI() string { return c.s.chat }

func (c chatChannel) Subscribe(ctx context.Context, sub *engine.Subscriber) (engine.Snapshot, error) {
	c.s.mu.Lock()
	defer c.s.mu.Unlock()
	return engine.Snapshot{State: c.s.chatState, Seq: c.s.chatSeq}, nil
}

func (c chatChannel) Dispatch(ctx context.Context, d engine.Dispatch) error {
	a, err := decodeAction(d.Action)
	if err != nil {
		return err
	}
	origin := d.Origin
	return wireError(c.s.dispatch(a, &origin))
}

func decodeAction(raw json.RawMessage) (ahp.Action, error) {
	var a ahp.Action
	if err := json.Unmarshal(raw, &a); err != nil {
		return ahp.Action{}, errcode.New(errcode.Invalid, "the action does not decode: %v", err)
	}
	return a, nil
}

// wireError gives a dispatch error the code transport answers it with.
func wireError(err error) error {
	var r *RefusedError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrNoSession):
		return errcode.Wrap(errcode.NotFound, err, "no such session")
	case errors.As(err, &r):
		return errcode.Wrap(errcode.Invalid, err, "%s", r.Reason)
	case errors.Is(err, ErrRefused):
		return errcode.Wrap(errcode.Invalid, err, "%s", err.Error())
	}
	return err
}
