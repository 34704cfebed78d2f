package local

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

	"go.opentelemetry.io/otel/trace"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/chatlog"
	"github.com/agenthost/bots/chatlog/filechatlog"
	"github.com/agenthost/bots/engine"
	"github.com/agenthost/bots/errcode"
	"github.com/agenthost/bots/internal/feed"
	"github.com/agenthost/bots/replica"
	"github.com/agenthost/bots/telemetry"
	"github.com/agenthost/bots/wake"
)

// Preset is a named way to start a session: a provider and a model.
type Preset struct {
	Provider, Model string
}

// Config configures a Host.
type Config struct {
	// Telemetry receives the back sessions by agent and state, and a span
	// per back turn, a child of the wake that sent its message; nil
	// records none.
	Telemetry *telemetry.Hub
	// Bus carries the sessions' actions to subscribers; nil makes one. A
	// transport.Server serving the sessions must be given the same Bus.
	Bus *engine.Bus
	// Harnesses run the sessions, by provider. A start naming a provider
	// not here is refused.
	Harnesses map[string]wake.Harness
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
	Scrub wake.Scrubber
	// ConfigDir, when set and Logs is nil, is where back sessions' logs
	// are kept (filechatlog.Logs, beside their rows, see filerows.Rows).
	ConfigDir string
	// Logs keeps back sessions' logs (chatlog.Back), so that a Host
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

// BackTurns is how many ended turns a Host session's chat holds by
// default.
const BackTurns = 4

// Host is a wake.SessionHost that runs back sessions in this process,
// each on a wake.Agent of its provider's wake.Harness, and serves their
// state as AHP session and chat channels: Channel answers an
// engine.Host's question for their URIs. A session's owner (or a root principal) may subscribe to
// its channels and dispatch to its chat.
//
// With Config.ConfigDir, each back session (one whose _meta names
// wake.BackSessionMeta) keeps a log, and a Host that starts again holds
// every back session it held: a restored session opens its agent at its
// next turn, which the harness continues (acp loads the agent's session).
// Other sessions live in memory only.
type Host struct {
	hub       *telemetry.Hub
	bus       *engine.Bus
	harnesses map[string]wake.Harness
	presets   map[string]Preset
	log       *slog.Logger
	now       func() time.Time
	keep      int // ended turns a chat holds, at least 1
	// pub is where the sessions publish (on bus), holding keep ended
	// turns each.
	pub    *replica.Publisher
	scrub  wake.Scrubber
	logs   chatlog.Logs // where back sessions' logs are, nil for none
	shared bool         // Config.Shared
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

	gate atomic.Pointer[wake.ToolGate] // SetToolGate's, asked by every session's SessionInfo.Gate
}

var (
	_ wake.SessionHost = (*Host)(nil)
	_ wake.Gated       = (*Host)(nil)
	_ wake.Lister      = (*Host)(nil)
)

// SetToolGate sets the gate every session asks, those already open
// included: bot.New gives the service's.
func (h *Host) SetToolGate(g wake.ToolGate) { h.gate.Store(&g) }

// hostGate is the ToolGate a Host's sessions are given: it asks the
// one SetToolGate set at each call, and answers as a host with none until
// then.
type hostGate struct{ h *Host }

func (g hostGate) inner() wake.ToolGate {
	if p := g.h.gate.Load(); p != nil {
		return *p
	}
	return nil
}

func (g hostGate) Allowed(ctx context.Context, s wake.SessionInfo) (wake.ToolSet, error) {
	if in := g.inner(); in != nil {
		return in.Allowed(ctx, s)
	}
	return wake.DefaultToolPolicy().For(nil), nil
}

func (g hostGate) Call(ctx context.Context, s wake.SessionInfo, name string, input json.RawMessage) (string, error) {
	if in := g.inner(); in != nil {
		return in.Call(ctx, s, name, input)
	}
	return "", fmt.Errorf("this host offers no %s", name)
}

// New returns a Host running sessions on cfg's harnesses.
func New(cfg Config) (*Host, error) {
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
	h := &Host{
		hub: cfg.Telemetry,
		bus: bus, harnesses: map[string]wake.Harness{}, presets: map[string]Preset{}, log: log, now: now, keep: keep, scrub: cfg.Scrub,
		logs: cfg.Logs, shared: cfg.Shared, sessions: map[string]*localSession{}, chats: map[string]*localSession{},
		creating: map[string]bool{}, disposed: map[string]bool{},
	}
	h.pub = &replica.Publisher{Bus: bus, Keep: keep, Log: log}
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
		h.logs = filechatlog.New(cfg.ConfigDir)
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
func (h *Host) Bus() *engine.Bus { return h.bus }

// Providers returns the providers the host runs sessions on, sorted.
func (h *Host) Providers() []string {
	out := make([]string, 0, len(h.harnesses))
	for p := range h.harnesses {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// Start starts a session of spec on its provider's harness.
func (h *Host) Start(ctx context.Context, spec wake.Spec) (string, error) {
	hr, provider, model, err := h.harness(spec)
	if err != nil {
		return "", err
	}
	uri := "ahp-session:/" + newID()
	s := h.newSession(uri, spec, hr, provider, model, h.now())
	s.fenceFrom(ctx)
	agent, err := hr.Open(ctx, s.info)
	if err != nil {
		return "", &wake.RefusedError{Reason: err.Error(), Err: err}
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
func (h *Host) Restore(ctx context.Context, uri string, spec wake.Spec) error {
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
func (h *Host) Reload(ctx context.Context, uri string, spec wake.Spec) (replaced bool, err error) {
	key, ok := backLogKey(uri, spec.Meta)
	if !ok || h.logs == nil {
		return false, wake.ErrNoSession
	}
	h.swap.Lock()
	defer h.swap.Unlock()
	if s, held := h.session(uri); held {
		// A copy that follows the log reads what it has not yet heard.
		s.catchUp(ctx)
		// No one else wrote the log since: the copy held is the log's.
		rctx, cancel := context.WithTimeout(ctx, replica.Wait)
		raw, _, err := h.logs.Read(rctx, key)
		cancel()
		if err == nil {
			s.Lock()
			c := s.ChatState()
			same := int64(len(raw)) == s.tail.Lines && !s.diverged && c.ActiveTurn == nil && c.SteeringMessage == nil && len(c.QueuedMessages) == 0
			s.Unlock()
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
		delete(h.chats, old.ChatURI)
	}
	h.mu.Unlock()
	if old != nil {
		old.dispose()
	}
	err = h.replayLog(ctx, key, true)
	if errors.Is(err, iofs.ErrNotExist) {
		return old != nil, fmt.Errorf("%w: %v", wake.ErrNoSession, err)
	}
	return old != nil, err
}

// Idle returns once the session's chat has no running turn and nothing
// waiting, or the session is gone, or ctx ends.
func (h *Host) Idle(ctx context.Context, uri string) error {
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	state, ch, err := h.Follow(fctx, uri)
	if errors.Is(err, wake.ErrNoSession) {
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
func (h *Host) harness(spec wake.Spec) (wake.Harness, string, string, error) {
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
func (h *Host) newSession(uri string, spec wake.Spec, hr wake.Harness, provider, model string, now time.Time) *localSession {
	info := wake.SessionInfo{URI: uri, Provider: provider, Model: model, Dir: spec.Dir, Title: spec.Title, SystemPrompt: spec.SystemPrompt,
		Owner: spec.Owner, Meta: maps.Clone(spec.Meta), Gate: hostGate{h}}
	if spec.Client != nil {
		info.Tools = slices.Clone([]ahp.ToolDefinition(spec.Client.Tools))
	}
	chat := ahp.DefaultChatURI(uri)
	s := &localSession{h: h, spec: spec, hr: hr, info: info,
		createdAt: ahp.FormatTime(now), waits: map[string]chan ahp.Action{}, tail: replica.Log{Logs: h.logs, Shared: h.sh}}
	s.Publisher, s.SessionURI, s.ChatURI, s.Feed = h.pub, uri, chat, feed.New[ahp.Action]()
	ss := ahp.SessionState{
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
		ss.ActiveClients = append(ss.ActiveClients, *spec.Client)
	}
	summary := ahp.ChatSummary{Resource: chat, Title: spec.Title, Status: ahp.StatusIdle, ModifiedAt: s.createdAt}
	ss.Chats = ahp.List[ahp.ChatSummary]{summary}
	s.Reset(ss, ahp.ChatState{ChatSummary: summary, Turns: ahp.List[ahp.Turn]{}}, 0)
	return s
}

// add writes a new session's log, when it keeps one, and holds it. A log
// that cannot be written is reported; the session then lives in memory
// only.
func (h *Host) add(s *localSession, provider, model string) error {
	s.here = true
	if key, ok := backLogKey(s.SessionURI, s.spec.Meta); ok && h.logs != nil {
		h.mu.Lock()
		creating := h.creating[s.SessionURI]
		h.creating[s.SessionURI] = true
		delete(h.disposed, s.SessionURI)
		h.mu.Unlock()
		if creating {
			return refused("the host is making %s already", s.SessionURI)
		}
		defer func() {
			h.mu.Lock()
			delete(h.creating, s.SessionURI)
			h.mu.Unlock()
		}()
		if err := h.createLog(key, s, provider, model); err != nil {
			h.log.Warn("wake: a back session's log could not be made; a restart will not hold the session", "log", key, "session", s.SessionURI, "err", err)
		} else {
			s.tail.Key, s.logged, s.tail.Lines = key, true, 1
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed || h.sessions[s.SessionURI] != nil {
		if s.logged {
			h.removeLog(s.tail.Key)
		}
		if h.closed {
			return refused("the host is closed")
		}
		return refused("the host holds %s already", s.SessionURI)
	}
	h.sessions[s.SessionURI] = s
	h.chats[s.ChatURI] = s
	return nil
}

// Has reports whether the host holds the session.
func (h *Host) Has(ctx context.Context, session string) (bool, error) {
	_, ok := h.session(session)
	return ok, nil
}

func (h *Host) session(uri string) (*localSession, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s, ok := h.sessions[uri]
	return s, ok
}

// Dispose ends the session: its running turn is stopped, its agent closed
// and its channels ended.
func (h *Host) Dispose(ctx context.Context, session string) error {
	h.mu.Lock()
	s, ok := h.sessions[session]
	if ok {
		delete(h.sessions, session)
		delete(h.chats, s.ChatURI)
		if h.sh != nil {
			h.disposed[session] = true
		}
	}
	h.mu.Unlock()
	if !ok {
		return wake.ErrNoSession
	}
	s.dispose()
	if s.logged {
		h.removeLog(s.tail.Key)
	}
	return nil
}

var (
	_ wake.BotForgetter   = (*Host)(nil)
	_ wake.SessionFolders = (*Host)(nil)
)

// SessionFolder returns the folder the session it holds works in.
func (h *Host) SessionFolder(session string) (string, bool) {
	s, ok := h.session(session)
	if !ok {
		return "", false
	}
	return s.spec.Dir, true
}

// ForgetBot disposes of the back sessions of bot, a deleted bot, that the
// host holds, ending their agents, then has every harness that keeps
// something of the bot's own (wake.BotForgetter) remove it.
func (h *Host) ForgetBot(ctx context.Context, bot string) error {
	h.mu.Lock()
	var uris []string
	for uri, s := range h.sessions {
		if b, _, _, ok := wake.BackSession(s.spec.Meta); ok && b == bot {
			uris = append(uris, uri)
		}
	}
	h.mu.Unlock()
	for _, uri := range uris {
		h.Dispose(ctx, uri)
	}
	var errs []error
	for _, hr := range h.harnesses {
		if f, ok := hr.(wake.BotForgetter); ok {
			errs = append(errs, f.ForgetBot(ctx, bot))
		}
	}
	return errors.Join(errs...)
}

// removeLog removes a back session's log, reporting a failure.
func (h *Host) removeLog(key chatlog.Key) {
	ctx, cancel := context.WithTimeout(context.Background(), replica.Wait)
	defer cancel()
	if err := h.logs.Remove(ctx, key); err != nil {
		h.log.Warn("wake: a disposed back session's log could not be removed", "log", key, "err", err)
	}
}

// Close ends every session and refuses new ones, and returns once every
// turn it ran has returned; the sessions' logs stay, so a Host
// started again holds them. It is idempotent.
func (h *Host) Close() error {
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
func (h *Host) Send(ctx context.Context, session string, m wake.Pending) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s, ok := h.session(session)
	if !ok {
		return wake.ErrNoSession
	}
	s.fenceFrom(ctx)
	if h.hub.Tracing() {
		s.Lock()
		s.parent = trace.SpanContextFromContext(ctx)
		s.Unlock()
	}
	return s.dispatch(ahp.PendingMessageSet(m.Kind, m.ID, m.Message), nil)
}

// Dispatch applies a client's action to the session's chat.
func (h *Host) Dispatch(ctx context.Context, session string, a ahp.Action) error {
	s, ok := h.session(session)
	if !ok {
		return wake.ErrNoSession
	}
	return s.dispatch(a, nil)
}

// Follow returns the session chat's state and the actions applied to it
// from then on.
func (h *Host) Follow(ctx context.Context, session string) (ahp.ChatState, <-chan ahp.Action, error) {
	s, ok := h.session(session)
	if !ok {
		return ahp.ChatState{}, nil, wake.ErrNoSession
	}
	st, actions, ok := s.Chat.Follow(ctx)
	if !ok {
		return ahp.ChatState{}, nil, wake.ErrNoSession
	}
	return st, actions, nil
}

// Channel returns the session or chat channel at uri for a engine.Host
// to serve: the session's owner, or a root principal, may subscribe to it
// and dispatch to the chat. Any other URI is errcode.NotFound.
func (h *Host) Channel(ctx context.Context, c engine.Caller, uri string) (engine.Channel, error) {
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
func (h *Host) BackSessions() []wake.Held {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]wake.Held, 0, len(h.sessions))
	for uri, s := range h.sessions {
		if bot, person, _, ok := wake.BackSession(s.spec.Meta); ok {
			out = append(out, wake.Held{Session: uri, Bot: bot, Person: person})
		}
	}
	return out
}

// HeldAt returns the back session whose session or chat URI is uri.
func (h *Host) HeldAt(uri string) (wake.Held, bool) {
	h.mu.Lock()
	s := h.sessions[uri]
	if s == nil {
		s = h.chats[uri]
	}
	h.mu.Unlock()
	if s == nil {
		return wake.Held{}, false
	}
	bot, person, _, ok := wake.BackSession(s.spec.Meta)
	return wake.Held{Session: s.SessionURI, Bot: bot, Person: person}, ok
}

// Summaries returns the listing rows of the sessions owned by owner (every
// session for ""), newest first.
func (h *Host) Summaries(owner string) []ahp.SessionSummary {
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
		st, cs, _ := s.State()
		meta := st.SessionMetadata
		meta.Status = cs.Status
		out = append(out, ahp.SessionSummary{
			SessionMetadata: meta, Resource: s.SessionURI, CreatedAt: s.createdAt, ModifiedAt: cs.ModifiedAt,
			Meta: st.Meta, DefaultChat: s.ChatURI,
		})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ModifiedAt > out[j].ModifiedAt })
	return out
}
