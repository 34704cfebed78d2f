package wake

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/lease"
	"github.com/agenthost/bots/persona"
	"github.com/agenthost/bots/record"
	"github.com/agenthost/bots/telemetry"
)

// Names the wake gives things.
const (
	// ClientID is the client id under which the wake provides post_message
	// to back sessions.
	ClientID = "ahpd.bot"
	// PostMessage is the tool a back session answers the person with.
	PostMessage = "post_message"
	// SubagentTool is the tool name of the call that shows the back
	// session in the main turn.
	SubagentTool = "subagent"
	// ErrorSendFailed is the errorType of a main turn the wake fails.
	ErrorSendFailed = "sendFailed"
	// DelegationMeta is the _meta key naming the main chat on a woken
	// message, as VS Code's host reads it.
	DelegationMeta = "vscode.chat.delegation"
	// NotConfirmed is the reason of a main turn whose send the host did not
	// confirm in time: VS Code's words.
	NotConfirmed = "Remote message delivery was not confirmed. It may already be queued; do not retry automatically."
)

// SystemPrompt is what every back session is told: only what no file can.
// It names only post_message, the tool the wake offers every back session;
// a harness adds a sentence naming its own question tool (see
// acp.QuestionPrompt), so that a prompt names no tool that is not offered.
// The bot's own rules are its AGENTS.md.
const SystemPrompt = "A person is waiting in the main chat for your reply. " +
	"post_message is what answers them: call it with the text they should read, as often as you need."

// PostMessageTool is post_message as it is offered to a back session.
func PostMessageTool() ahp.ToolDefinition {
	return ahp.ToolDefinition{
		Name:        PostMessage,
		Title:       "Post message",
		Description: "Post a message to the person waiting in the main chat. Call it with the text they should read; you may call it more than once.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string","description":"What the person reads."}},"required":["text"]}`),
	}
}

// Persona writes a bot's AGENTS.md where its folder has none;
// persona.Files is one.
type Persona interface {
	// Ensure writes <dir>/AGENTS.md from the template only when the folder
	// has none, never over a file that is there.
	Ensure(ctx context.Context, dir string, p persona.Parts, template string) (bool, error)
}

// Config configures a Waker. Host is required.
type Config struct {
	// Telemetry receives a span per wake, a child of the main turn's
	// (WakeContext); nil records none.
	Telemetry *telemetry.Hub
	// Host is where back sessions live.
	Host SessionHost
	// Rows keeps which session each (bot, person, name) is on (memrows,
	// filerows, pgrows). Required.
	Rows Rows
	// Persona writes AGENTS.md at the first wake where the folder has
	// none; nil writes nothing.
	Persona Persona
	// DefaultAgent is the provider a back session runs on when its bot
	// names neither a preset nor a provider.
	DefaultAgent string
	// MainTurnPostMessageAbsent, ContextIn and AskIn are the plugin
	// options; "" is each one's default, and New refuses a value that is
	// not one of its constants.
	MainTurnPostMessageAbsent PostMessageAbsent
	ContextIn                 ContextIn
	AskIn                     AskIn
	// Deny names tools back sessions may not call.
	Deny []string
	// Scrub takes every secret value it knows out of each action the wake
	// carries into a main chat (posts, questions, approvals, tool results,
	// final text, errors). Nil means the Host's, when it offers one
	// (Scrubbing), else none.
	Scrub Scrubber
	// SendTimeout is how long a send waits for the host's confirmation;
	// zero means ten seconds.
	SendTimeout time.Duration
	// Taken reports whether a channel that is no back session holds uri
	// now: a main chat opened at it (its session or chat URI). A row's back
	// session the host lost is never restored at such a URI, whose
	// subscribers are another chat's; a new one is started and the row
	// written over. Nil: none is.
	Taken func(uri string) bool
	// Logger hears reports; nil discards.
	Logger *slog.Logger
	// Now returns the time; nil means time.Now.
	Now func() time.Time
	// Location is the zone of the context block's time; nil is time.Local.
	Location *time.Location
	// Leases, when set, are shared by the instances on one database: a
	// back session runs only on the instance holding the lease of its
	// (bot, person, name), and the others' messages wait for it (see
	// hold.go). Holder names this instance among them (required with
	// Leases); LeaseTTL is the leases' time to live (zero is
	// lease.DefaultTTL) and LeasePoll how often a waiting message tries
	// again (zero is LeaseTTL/10).
	Leases    lease.Leases
	Holder    string
	LeaseTTL  time.Duration
	LeasePoll time.Duration
}

// Waker wakes back sessions for main chats. Its methods are safe for
// concurrent use.
type Waker struct {
	hub         *telemetry.Hub
	takeovers   *telemetry.Series // bots_lease_takeovers_total{kind="back_session"}
	host        SessionHost
	rows        Rows
	persona     Persona
	agent       string
	absent      PostMessageAbsent
	contextIn   ContextIn
	askIn       AskIn
	deny        []string
	scrub       Scrubber
	sendTimeout time.Duration
	taken       func(uri string) bool
	log         *slog.Logger
	now         func() time.Time
	loc         *time.Location

	keys   keyed
	starts startFailures

	leases    lease.Leases
	holder    string
	leaseTTL  time.Duration
	leasePoll time.Duration
	leaseMu   sync.Mutex
	held      map[string]*holding // lease key → the lease held
	tokens    map[string]int64    // lease key → the token last held

	mu       sync.Mutex
	sessions map[string]*followed
	turns    map[*Turn]struct{} // the main turns not ended
	closed   bool
	base     context.Context
	cancel   context.CancelFunc

	// goroutines are the turns' and the follows' goroutines, which Close
	// waits for; one is added only under mu while not closed.
	goroutines sync.WaitGroup
}

// New checks cfg and returns a Waker. An option with an unknown value is
// reported at Warn and its default used.
func New(cfg Config) (*Waker, error) {
	if cfg.Host == nil {
		return nil, errors.New("wake: Config.Host is required")
	}
	for _, o := range []interface{ Check() error }{cfg.MainTurnPostMessageAbsent, cfg.ContextIn, cfg.AskIn} {
		if err := o.Check(); err != nil {
			return nil, fmt.Errorf("wake: option %w", err)
		}
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	w := &Waker{
		hub:       cfg.Telemetry,
		takeovers: cfg.Telemetry.With("kind", "back_session").Counter(telemetry.LeaseTakeovers, telemetry.LeaseTakeoversHelp),
		host:      cfg.Host, rows: cfg.Rows, persona: cfg.Persona, agent: cfg.DefaultAgent,
		deny: cfg.Deny, scrub: cfg.Scrub, sendTimeout: cfg.SendTimeout, taken: cfg.Taken, log: log, now: cfg.Now, loc: cfg.Location,
		sessions: map[string]*followed{}, turns: map[*Turn]struct{}{},
	}
	if w.rows == nil {
		return nil, errors.New("wake: Config.Rows is required (memrows.Rows keeps them in memory)")
	}
	if cfg.Leases != nil {
		if cfg.Holder == "" {
			return nil, errors.New("wake: Config.Holder must name this instance when Leases are set")
		}
		w.leases, w.holder, w.leaseTTL, w.leasePoll = cfg.Leases, cfg.Holder, cfg.LeaseTTL, cfg.LeasePoll
		if w.leaseTTL <= 0 {
			w.leaseTTL = lease.DefaultTTL
		}
		if w.leasePoll <= 0 {
			w.leasePoll = w.leaseTTL / 10
		}
		w.held, w.tokens = map[string]*holding{}, map[string]int64{}
		cfg.Telemetry.With("kind", "back_session").GaugeFunc(telemetry.LeasesHeld, telemetry.LeasesHeldHelp, func() float64 {
			w.leaseMu.Lock()
			defer w.leaseMu.Unlock()
			return float64(len(w.held))
		})
	}
	if sh, ok := cfg.Host.(Scrubbing); ok && w.scrub == nil {
		w.scrub = sh.Scrubber()
	}
	if w.sendTimeout <= 0 {
		w.sendTimeout = 10 * time.Second
	}
	if w.now == nil {
		w.now = time.Now
	}
	if w.loc == nil {
		w.loc = time.Local
	}
	w.absent = or(cfg.MainTurnPostMessageAbsent, PostMessageAbsentPost)
	w.contextIn = or(cfg.ContextIn, ContextInText)
	w.askIn = or(cfg.AskIn, AskInMain)
	w.base, w.cancel = context.WithCancel(context.Background())
	return w, nil
}

// Options returns the option values in force: mainTurnPostMessageAbsent,
// contextIn and askIn.
func (w *Waker) Options() (PostMessageAbsent, ContextIn, AskIn) {
	return w.absent, w.contextIn, w.askIn
}

// Close stops following back sessions and ends every main turn still
// waiting, without ending it in its chat (the process is going away), lets
// go of the leases it holds, and returns once every goroutine the Waker
// started has returned. It is idempotent.
func (w *Waker) Close() error {
	w.mu.Lock()
	w.closed = true
	turns := make([]*Turn, 0, len(w.turns))
	for t := range w.turns {
		turns = append(turns, t)
	}
	w.mu.Unlock()
	w.cancel()
	for _, t := range turns {
		t.mu.Lock()
		t.endLocked()
		t.mu.Unlock()
	}
	w.goroutines.Wait()
	w.releaseAll()
	return nil
}

// goLocked runs f in a goroutine Close waits for; it reports false, running
// nothing, once the Waker is closed. Called with w.mu held.
func (w *Waker) goLocked(f func()) bool {
	if w.closed {
		return false
	}
	w.goroutines.Add(1)
	go func() {
		defer w.goroutines.Done()
		f()
	}()
	return true
}

// Message is one message said in a main chat, for the wake.
type Message struct {
	// Bot is the bot the chat is with, as it is now.
	Bot record.Record
	// Person is the owner string of the person who said it (user:<id>,
	// root:<host>).
	Person string
	// Session and Chat are the main chat's session and chat URIs.
	Session, Chat string
	// TurnID is the main turn the message began.
	TurnID string
	// Text is what the person said.
	Text string
	// Route is the chat-network route whose message began the turn, when
	// one did: the turn runs in a back session of its own (RoutedName),
	// whose _meta names the route so that its tools are narrowed by the
	// route's (BackSessionRoute).
	Route string
	// Via says where the person said it when not in the main chat itself:
	// a chat network and its scope, as a route passes it on ("irc:alice
	// in #motion"). One line; empty for the main chat's own messages.
	Via string
	// StartedAt is when the main turn began.
	StartedAt time.Time

	parent trace.SpanContext // the main turn's span, set by WakeContext
}

// Main is the main chat a wake answers into; the bot-chat provider
// implements it. Its methods may be called from any goroutine, never with
// a lock of the caller's held that the provider could wait on.
type Main interface {
	// Chat applies a server action to the main chat: it logs, applies and
	// publishes it. It reports false, doing nothing, when the action no
	// longer applies (the turn it names has ended).
	Chat(a ahp.Action) bool
	// Session applies a server action to the main chat's session and
	// publishes it.
	Session(a ahp.Action)
}

// keyed is a set of mutexes by key.
type keyed struct {
	mu sync.Mutex
	m  map[string]*keyedEntry
}

type keyedEntry struct {
	mu sync.Mutex
	n  int
}

func (k *keyed) lock(key string) func() {
	k.mu.Lock()
	if k.m == nil {
		k.m = map[string]*keyedEntry{}
	}
	e := k.m[key]
	if e == nil {
		e = &keyedEntry{}
		k.m[key] = e
	}
	e.n++
	k.mu.Unlock()
	e.mu.Lock()
	return func() {
		e.mu.Unlock()
		k.mu.Lock()
		if e.n--; e.n == 0 {
			delete(k.m, key)
		}
		k.mu.Unlock()
	}
}

// failure is a reason a main turn ends failed.
type failure struct{ msg string }

func (f *failure) Error() string { return f.msg }

func failf(format string, args ...any) *failure { return &failure{fmt.Sprintf(format, args...)} }

// session returns the back session the message's name is on: the row's,
// when the host still holds it or can restore it (Restorer), else a new
// one whose row is written over the old. One (bot, person, name) starts one session at a time.
func (w *Waker) session(ctx context.Context, m Message, name string, takeover bool) (string, error) {
	b := m.Bot
	if w.persona != nil && b.Computer == "" && b.Workspace != "" {
		parts := persona.Parts{Name: b.Name, Description: b.Description, Instructions: b.Instructions}
		if _, err := w.persona.Ensure(ctx, b.Workspace, parts, b.Template); err != nil {
			w.log.Warn("wake: AGENTS.md could not be written at the wake", "bot", b.ID, "folder", b.Workspace, "err", err)
		}
	}
	key := b.ID + "\x00" + m.Person + "\x00" + name
	seen := w.starts.last(key)
	unlock := w.keys.lock(key)
	defer unlock()
	if f := w.starts.last(key); f != nil && f != seen {
		return "", f // the start this message waited on failed: it is told at once
	}
	row, ok, err := w.rows.Get(ctx, b.ID, m.Person, name)
	if err != nil {
		w.log.Warn("wake: a session row could not be read; a new session is started", "bot", b.ID, "name", name, "err", err)
		ok = false
	}
	if r, can := w.host.(Reloader); ok && takeover && can {
		// Another instance may have run the session since this one last
		// held its lease: read it back from the shared log.
		replaced, err := r.Reload(ctx, row.Session, w.spec(m, name))
		if err != nil && !errors.Is(err, ErrNoSession) {
			w.log.Warn("wake: a back session could not be read back from its log", "bot", b.ID, "name", name, "session", row.Session, "err", err)
		}
		if replaced {
			// What followed the copy read over is let go: the next
			// turn follows the session as read back.
			w.mu.Lock()
			delete(w.sessions, row.Session)
			w.mu.Unlock()
		}
	}
	if ok {
		has, err := w.host.Has(ctx, row.Session)
		if err != nil {
			return "", failf("The session host could not say whether it holds the back session %s: %v", row.Session, err)
		}
		switch {
		case has && w.elsewhere(row.Session, b.Workspace):
			// The row's session works in another folder than the bot's:
			// it is another bot's of the slug (one a bundled bot hides),
			// and is never carried on here.
			w.log.Info("wake: the row's back session works in another folder than the bot; a new one is started", "bot", b.ID, "name", name, "session", row.Session)
			ok = false
		case has:
			return row.Session, nil
		}
	}
	if ok && w.taken != nil && (w.taken(row.Session) || w.taken(ahp.DefaultChatURI(row.Session))) {
		w.log.Warn("wake: the row's back session is gone and a chat holds its URI now; a new one is started", "bot", b.ID, "name", name, "session", row.Session)
		ok = false
	}
	spec := w.spec(m, name)
	if r, can := w.host.(Restorer); ok && can {
		err := r.Restore(ctx, row.Session, spec)
		if err == nil {
			return row.Session, nil
		}
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		w.log.Info("wake: the back session of a row could not be restored; a new one is started", "bot", b.ID, "name", name, "session", row.Session, "reason", reason(err))
	}
	uri, err := w.host.Start(ctx, spec)
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		f := failf("The host would not start a back session for %s: %s", botName(b), reason(err))
		if sentence, ok := explained(err); ok {
			f = &failure{sentence}
		}
		w.starts.set(key, f)
		return "", f
	}
	w.starts.set(key, nil)
	row = Row{Bot: b.ID, Person: m.Person, Name: name, Session: uri, Provider: spec.Provider, Preset: spec.Preset, UpdatedAt: w.now().UTC()}
	if err := w.rows.Put(ctx, row); err != nil {
		w.log.Warn("wake: a session row could not be written", "bot", b.ID, "name", name, "session", uri, "err", err)
	}
	return uri, nil
}

// elsewhere reports whether the host holds session working in a folder
// other than dir, where it can tell (SessionFolders).
func (w *Waker) elsewhere(session, dir string) bool {
	f, ok := w.host.(SessionFolders)
	if !ok {
		return false
	}
	held, known := f.SessionFolder(session)
	return known && filepath.Clean(held) != filepath.Clean(dir)
}

// spec is how a back session of m's bot starts: on its preset, else its
// provider and model, else the default agent; in its folder, owned by the
// person, titled with its name.
func (w *Waker) spec(m Message, name string) Spec {
	b := m.Bot
	s := Spec{
		Dir: b.Workspace, Owner: m.Person, Title: botName(b), SystemPrompt: SystemPrompt,
		Client: &ahp.SessionActiveClient{ClientID: ClientID, DisplayName: "Bot chat", Tools: ahp.List[ahp.ToolDefinition]{PostMessageTool()}},
		Deny:   w.deny,
		Meta:   map[string]any{BackSessionMeta: map[string]any{"bot": b.ID, "person": m.Person, "name": name, "created": created(b)}},
	}
	if m.Route != "" {
		s.Meta[BackSessionMeta].(map[string]any)["route"] = m.Route
	}
	switch {
	case b.Preset != "":
		s.Preset = b.Preset
	case b.Provider != "":
		s.Provider, s.Model = b.Provider, b.Model
	default:
		s.Provider = w.agent
	}
	return s
}

// created is b's creation as BackSessionMeta gives it.
func created(b record.Record) string {
	if b.CreatedAt.IsZero() {
		return "0"
	}
	return strconv.FormatInt(max(b.CreatedAt.UnixMilli(), 0), 10)
}

func botName(b record.Record) string {
	if b.Name != "" {
		return b.Name
	}
	return b.ID
}

// reason is the host's reason in err, without the sentinel's words.
func reason(err error) string {
	s := err.Error()
	for _, sentinel := range []error{ErrRefused, ErrNoSession} {
		if s != sentinel.Error() {
			s = strings.TrimSuffix(s, ": "+sentinel.Error())
		}
	}
	return s
}

// ContextBlock returns the text a woken message carries: the context block,
// then the person's words. via, when not empty, is a line of its own
// saying where the person said it (Message.Via).
func ContextBlock(chat, person, via string, at time.Time, words string) string {
	if via != "" {
		via = "via: " + via + "\n"
	}
	return "<context>\nmain chat: " + chat + "\nfrom: " + person + "\n" + via + "time: " + at.Format(time.RFC3339) + "\n</context>\n" + words
}

// personID is the person's id as the context block names them: the user
// id of user:<id>, else the owner string.
func personID(owner string) string {
	if id, ok := strings.CutPrefix(owner, "user:"); ok {
		return id
	}
	return owner
}

// pending is the queued message m becomes in the back session.
func (w *Waker) pending(m Message, id string) Pending {
	text := m.Text
	if w.contextIn == ContextInText {
		text = ContextBlock(m.Chat, personID(m.Person), m.Via, w.now().In(w.loc), m.Text)
	}
	return Pending{Kind: ahp.PendingQueued, ID: id, Message: ahp.Message{
		Text: text, Origin: ahp.MessageOrigin{Kind: ahp.MessageAgent},
		Meta: map[string]any{DelegationMeta: map[string]any{
			"sourceSession": m.Session, "sourceChat": m.Chat, "sourceTurnId": m.TurnID, "messageId": id,
		}},
	}}
}

// send hands p to the session, waiting SendTimeout for the confirmation.
func (w *Waker) send(ctx context.Context, session string, p Pending) error {
	sctx, cancel := context.WithTimeout(ctx, w.sendTimeout)
	defer cancel()
	err := w.host.Send(sctx, session, p)
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	case errors.Is(err, context.DeadlineExceeded) || sctx.Err() != nil:
		return &failure{NotConfirmed}
	case errors.Is(err, ErrNoSession):
		return failf("The host no longer holds the back session %s.", session)
	}
	return failf("The host refused the message: %s", reason(err))
}
