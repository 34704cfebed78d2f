package mainchat

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/agenthost/bots/access"
	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/bot/internal/diskfull"
	"github.com/agenthost/bots/chatlog"
	"github.com/agenthost/bots/engine"
	"github.com/agenthost/bots/errcode"
	"github.com/agenthost/bots/lease"
	"github.com/agenthost/bots/record"
	"github.com/agenthost/bots/replica"
	"github.com/agenthost/bots/wake"
)

// Provider is the provider of a bot chat: a session a person talks to a
// bot in, which runs no model.
const Provider = "bot-chat"

// chatGrant is what opening a bot chat needs, as any session does.
const chatGrant = "session:create"

// BotMeta is the _meta key that carries the bot a chat is with.
const BotMeta = "ahpd.bot"

// turnsMeta is the _meta key of a chat's listing row that says how many
// turns it holds ("turns") and, while they are all in memory, the text of
// its first message ("firstMessage", at most firstMessageRunes runes): what
// a client titles a chat with when its title is the bot's name.
const turnsMeta = "ahpd.turns"

const firstMessageRunes = 120

// UnsavedType is the errorType of a turn a line of which the chat's log
// did not take (bot.UnsavedType says why it is not shown complete).
const UnsavedType = "turnNotSaved"

// Agent is the bot-chat provider's entry in the root state's agents.
func Agent() ahp.AgentInfo {
	return ahp.AgentInfo{
		Provider: Provider, DisplayName: "Bot chat",
		Description: "A chat with a bot: it runs no model; each message wakes the bot's back session, which answers here.",
		Models:      ahp.List[ahp.SessionModelInfo]{},
	}
}

// botMark is the bot as a chat, its session and its row carry it in
// _meta["ahpd.bot"].
func botMark(r record.Record) map[string]any {
	labels := r.Labels
	if labels == nil {
		labels = []string{}
	}
	return map[string]any{
		"id": r.ID, "name": r.Name, "color": r.Color, "labels": labels, "body": r.Body, "kind": "direct",
	}
}

// KeepTurns is how many ended turns a chat holds in memory by default
// (bot.KeepTurns); fetchTurns reads older ones from its log.
const KeepTurns = 16

// turnsPage is how many older turns one fetchTurns answers by default.
const turnsPage = 50

// Bots is what the chats ask of the service that keeps the bots. Its
// methods are safe for concurrent use.
type Bots interface {
	// Principal is who the principal a connection authenticated as is
	// now, as the users directory has them.
	Principal(p access.Principal) access.Principal
	// Person is who the owner string of a chat is now.
	Person(owner string) access.Principal
	// Reads reports whether p may talk with bot id now: p may read its
	// record, or the bot is deleted (its chats stay their owners').
	Reads(ctx context.Context, p access.Principal, id string) bool
	// CanRead reports whether p may read the bot r.
	CanRead(p access.Principal, r record.Record) bool
	// Open returns the bot a chat is opened with, named by its slug or
	// its bot: URI, as p may read it: an errcode error otherwise.
	Open(ctx context.Context, p access.Principal, bot string) (record.Record, error)
	// ForTurn returns the bot id as a turn in its chat, which works in
	// dirs, runs it: its persona read, a bundled bot's folder written.
	// The error is record.ErrNotFound once the bot is deleted, ErrHidden
	// while a bundled bot of its slug hides it.
	ForTurn(ctx context.Context, id string, dirs []string) (record.Record, error)
}

// ErrHidden is what Bots.ForTurn answers for a bot a bundled bot of its
// slug hides: its chats are kept, and answer again once the host no
// longer ships that slug.
var ErrHidden = errors.New("the chat's bot is hidden by a bundled bot")

// Config is what New needs.
type Config struct {
	// Bots is the service that keeps the bots.
	Bots Bots
	// Store is the bots' records as people see them: the chats follow its
	// changes to judge who may still use them (revoke.go).
	Store record.Store
	// Wake configures the waker of the back sessions; its Host, Rows,
	// Leases, Holder, LeaseTTL (required), Logger, Now and Telemetry are
	// the chats' too. With Leases set, other instances write the logs
	// too.
	Wake wake.Config
	// Logs keeps the chats' logs; Listed is their listing, begun with
	// ListLogs before New.
	Logs   chatlog.Logs
	Listed *Listing
	// Bus is where the chats publish.
	Bus *engine.Bus
	// HostName is the host's name, whose principals' owner strings say.
	HostName string
	// Directory says a users directory tells who is who: a root
	// notification then goes only to whom its chat concerns. Without
	// one every connection is root and hears of every chat.
	Directory bool
	// DiskFull counts a write the disk refused; nil counts none.
	DiskFull func(error)
}

// Chats is the bot-chat provider: every chat by session and chat URI.
// Its methods are safe for concurrent use.
type Chats struct {
	bots      Bots
	store     record.Store
	bus       *engine.Bus
	logger    *slog.Logger
	now       func() time.Time
	hostName  string
	directory bool // Config.Directory: root notifications go only to whom they concern
	diskFull  func(error)
	meters    meters

	host   wake.SessionHost
	waker  *wake.Waker
	logs   chatlog.Logs
	rows   wake.Rows // the back sessions' rows, the Waker's
	shared bool      // other instances write the logs too: Config.Wake.Leases is set
	// sh is logs when shared and they can be followed (chatlog.Shared):
	// every write is then an append at the count of lines the chat has
	// applied, and the follower applies what other instances append.
	sh chatlog.Shared
	// pub is where the chats publish, and how many ended turns each
	// holds in memory (at least 1).
	pub *replica.Publisher
	// leases hold the main turns this instance runs, with sh
	// (lease.go): holder names this instance, leaseTTL is their time
	// to live.
	leases   lease.Leases
	holder   string
	leaseTTL time.Duration
	page     int // turns one fetchTurns answers, at least 1

	mu        sync.Mutex
	bySession map[string]*chat
	byChat    map[string]*chat
	closed    atomic.Bool

	stop     context.CancelFunc // ends the follower
	ctx      context.Context    // ends when the chats close
	taskMu   sync.Mutex         // guards adding to tasks against close
	tasks    sync.WaitGroup     // the follower and the effects it started
	disposed map[string]bool    // sessions disposed of here: the follower does not hold them again
	kick     chan struct{}      // asks the judge for a sweep (revoke.go)
}

// New makes the provider, its waker of back sessions, and replays every
// chat cfg.Listed lists. Close stops what it starts.
func New(cfg Config) (*Chats, error) {
	log := cfg.Wake.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	now := cfg.Wake.Now
	if now == nil {
		now = time.Now
	}
	diskFull := cfg.DiskFull
	if diskFull == nil {
		diskFull = func(error) {}
	}
	// A back session the host lost is never restored at the URI of a
	// chat held here (wake.Config.Taken): that chat's subscribers would
	// hear the back session. The waker asks only once c is made.
	var c *Chats
	wcfg := cfg.Wake
	wcfg.Taken = func(uri string) bool { return c.get(uri) != nil }
	w, err := wake.New(wcfg)
	if err != nil {
		return nil, err
	}
	c = &Chats{
		bots: cfg.Bots, store: cfg.Store, bus: cfg.Bus, logger: log, now: now, hostName: cfg.HostName,
		directory: cfg.Directory, diskFull: diskFull, meters: newMeters(cfg.Wake.Telemetry),
		host: cfg.Wake.Host, waker: w, logs: cfg.Logs, rows: cfg.Wake.Rows, shared: cfg.Wake.Leases != nil, page: turnsPage,
		pub:       &replica.Publisher{Bus: cfg.Bus, Keep: KeepTurns, Paged: true, Log: log},
		bySession: map[string]*chat{}, byChat: map[string]*chat{}, disposed: map[string]bool{},
		kick: make(chan struct{}, 1),
	}
	if sh, ok := cfg.Logs.(chatlog.Shared); ok && c.shared {
		c.sh = sh
		c.leases, c.holder, c.leaseTTL = cfg.Wake.Leases, cfg.Wake.Holder, cfg.Wake.LeaseTTL
	}
	if err := c.replay(cfg.Listed); err != nil {
		w.Close()
		return nil, err
	}
	c.meters.countChats(c)
	ctx, stop := context.WithCancel(context.Background())
	c.stop, c.ctx = stop, ctx
	// The judge follows every change of a record: an owner changed by
	// the store, or a bot deleted, ends what its people may no longer
	// hold.
	feed, err := cfg.Store.Watch(ctx)
	if err != nil {
		log.Warn("bot: the bots' changes cannot be followed; a chat is judged again only when the users change", "err", err)
	}
	c.tasks.Add(1)
	go func() {
		defer c.tasks.Done()
		c.judge(ctx, feed)
	}()
	if c.sh != nil {
		c.tasks.Add(1)
		go func() {
			defer c.tasks.Done()
			c.follow(ctx)
		}()
		c.tasks.Add(1)
		go func() {
			defer c.tasks.Done()
			c.watch(ctx, watchEvery(c.leaseTTL))
		}()
	}
	// A message that waited behind a turn the process lost starts now;
	// with shared logs it may be another instance's turn, still running,
	// so the messages wait for the person to talk in the chat again.
	if !c.shared {
		for _, ch := range c.bySession {
			ch.next(context.Background())
		}
	}
	return c, nil
}

// Close stops the chats' goroutines and their waker, and waits for them.
func (c *Chats) Close() {
	c.taskMu.Lock()
	c.closed.Store(true)
	c.taskMu.Unlock()
	c.stop()
	c.tasks.Wait()
	c.waker.Close()
}

// Host is the session host the chats' back sessions run on.
func (c *Chats) Host() wake.SessionHost { return c.host }

// chat is one bot chat: its session and its default chat.
type chat struct {
	c *Chats
	// Chat holds the chat's and its session's states, publishes them, and
	// is its writer lock (Lock): whoever decides on the chat and writes
	// its log holds it. The fields below change under it, but bot, owner
	// and created, which never change, and the atomics closed and head.
	replica.Chat
	bot     string
	owner   string
	created string
	// closed says the chat's owner may no longer read its bot: the sweep
	// closed it to them (revoke.go).
	closed atomic.Bool

	// log is the chat's place in its log (its key is set at the start):
	// how many of its lines the chat holds applied; head is how many the
	// follower heard it has (shared logs).
	log    replica.Log
	head   atomic.Int64
	mark   map[string]any
	turn   *wake.Turn
	turnID string    // the main turn turn answers
	began  time.Time // when turn began, by the server's clock
	// repair is a line the replay added in memory only (shared logs) and
	// the log gets before the chat's next line.
	repair  *logLine
	unsaved string // why a line of the active turn is not in the log; "" when none failed
	// metered is when the active main turn began here, parted whether it
	// has a part of its answer yet: for telemetry alone.
	metered      time.Time
	parted       bool
	outcome      string    // how the last main turn ended
	watched      string    // the followed turn in progress the watcher looks at
	watchedSince time.Time // when that turn began here, or the watcher first saw it
}

// all returns every chat held now.
func (c *Chats) all() []*chat {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Collect(maps.Values(c.bySession))
}

func (c *Chats) get(uri string) *chat {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ch := c.bySession[uri]; ch != nil {
		return ch
	}
	return c.byChat[uri]
}

// mayUse reports whether p may open, read and talk in the chat: a
// principal that may do anything, or its owner while they may read its
// bot, as its record is now.
func (ch *chat) mayUse(ctx context.Context, p access.Principal) bool {
	return p.Any() || (p.Owns(ch.owner) && ch.c.bots.Reads(ctx, p, ch.bot))
}

// initial is the state of a chat just made.
func initialStates(session, chatURI, title, dir, created string, mark map[string]any) (ahp.SessionState, ahp.ChatState) {
	summary := ahp.ChatSummary{Resource: chatURI, Title: title, Status: ahp.StatusIdle, ModifiedAt: created}
	ss := ahp.SessionState{
		SessionMetadata: ahp.SessionMetadata{Provider: Provider, Title: title, Status: ahp.StatusIdle},
		Lifecycle:       ahp.LifecycleReady,
		ActiveClients:   ahp.List[ahp.SessionActiveClient]{},
		Chats:           ahp.List[ahp.ChatSummary]{summary},
		DefaultChat:     chatURI,
		Meta:            map[string]any{BotMeta: mark},
	}
	if dir != "" {
		ss.WorkingDirectories = []string{(&url.URL{Scheme: "file", Path: dir}).String()}
	}
	cs := ahp.ChatState{ChatSummary: summary, Turns: ahp.List[ahp.Turn]{}, Meta: map[string]any{BotMeta: mark}}
	return ss, cs
}

// Create makes a chat with the bot named in the call's config
// (createSession).
func (c *Chats) Create(ctx context.Context, call engine.Call) error {
	var p ahp.CreateSessionParams
	if err := call.Decode(&p); err != nil {
		return err
	}
	if p.Provider != Provider {
		return errcode.New(errcode.Invalid, "no agent for provider %q", p.Provider)
	}
	session := p.Channel
	if session == "" || len(session) > maxSessionURI {
		return errcode.New(errcode.Invalid, "a bot chat's session URI is 1 to %d bytes", maxSessionURI)
	}
	who := c.bots.Principal(call.Principal)
	if !who.Has(chatGrant) {
		return errcode.New(errcode.PermissionDenied, "Permission denied: opening a chat needs %s", chatGrant)
	}
	slug, _ := p.Config["bot"].(string)
	if slug == "" {
		return errcode.New(errcode.Invalid, "a bot chat's config names its bot: {\"bot\": \"<slug>\"}")
	}
	r, err := c.bots.Open(ctx, who, slug)
	if err != nil {
		return err
	}
	created := ahp.FormatTime(c.now().UTC().Truncate(time.Millisecond))
	chatURI := ahp.DefaultChatURI(session)
	title := r.Name
	if title == "" {
		title = r.ID
	}
	mark := botMark(r)
	ch := c.newChat(session, r.ID, who.Owner(c.hostName), created, logKey(r.ID, session), 0, mark)
	ss, cs := initialStates(session, chatURI, title, r.Workspace, created, mark)
	ch.Reset(ss, cs, 0)

	c.mu.Lock()
	if other := cmp.Or(c.bySession[session], c.byChat[session]); other != nil {
		c.mu.Unlock()
		if !other.mayUse(ctx, who) {
			return sessionNotAvailable(session)
		}
		return errcode.New(errcode.AlreadyExists, "Session already exists: %s", session)
	}
	if has, _ := c.host.Has(ctx, session); has {
		c.mu.Unlock()
		if !who.Any() {
			return sessionNotAvailable(session)
		}
		return errcode.New(errcode.AlreadyExists, "Session already exists: %s", session)
	}
	c.bySession[session] = ch
	c.byChat[chatURI] = ch
	c.mu.Unlock()
	open := logLine{Kind: replica.LineOpen, At: created, Session: session, Chat: chatURI, Owner: ch.owner, Bot: r.ID,
		Title: title, Dir: r.Workspace, CreatedAt: created, Meta: map[string]any{BotMeta: mark}}
	if err := createLog(c.logs, ch.log.Key, open); err != nil {
		c.mu.Lock()
		delete(c.bySession, session)
		delete(c.byChat, chatURI)
		c.mu.Unlock()
		c.diskFull(err)
		return diskfull.Unsaved("the chat "+session, fmt.Errorf("open a chat with %s: %w", botURI(r.ID), err))
	}
	ch.Lock()
	ch.log.Lines = max(ch.log.Lines, 1)
	ch.Unlock()
	c.notify(ch.owner, "root/sessionAdded", ahp.SessionAddedParams{Channel: ahp.RootURI, Summary: ch.summary()})
	return nil
}

// sessionNotAvailable refuses a createSession whose URI a session the
// caller may not use already has - another person's chat, or one of the
// host's back sessions - without saying whose it is or what it is: the
// same sentence whatever the reason (issue 22). Its owner, root and *:*
// are told that the session already exists.
func sessionNotAvailable(session string) error {
	return errcode.New(errcode.AlreadyExists, "Session %s is not available: choose another URI", session)
}

// Dispose ends a chat (disposeSession): its turn is stopped, its
// channels end and its log is removed.
func (c *Chats) Dispose(ctx context.Context, call engine.Call) error {
	ch := c.get(call.URI)
	if ch == nil || ch.SessionURI != call.URI {
		return errcode.New(errcode.NotFound, "no session %s", call.URI)
	}
	if !ch.mayUse(ctx, c.bots.Principal(call.Principal)) {
		return errcode.New(errcode.PermissionDenied, "Permission denied: %s", call.URI)
	}
	if !c.letGo(ch, c.sh != nil) {
		return errcode.New(errcode.NotFound, "no session %s", call.URI)
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), replica.Wait)
	defer cancel()
	if err := c.logs.Remove(rctx, ch.log.Key); err != nil {
		c.logger.Warn("bot: a disposed chat's log could not be removed", "log", ch.log.Key, "err", err)
	}
	c.notify(ch.owner, "root/sessionRemoved", ahp.SessionRemovedParams{Channel: ahp.RootURI, Session: ch.SessionURI})
	return nil
}

// letGo takes ch out of the chats, when they still hold it: its turn is
// stopped and its channels end. disposed remembers that this instance
// disposed of it (with shared logs, so a follower does not bring it back).
// It reports whether the chats held ch.
func (c *Chats) letGo(ch *chat, disposed bool) bool {
	c.mu.Lock()
	if c.bySession[ch.SessionURI] != ch {
		c.mu.Unlock()
		return false
	}
	delete(c.bySession, ch.SessionURI)
	delete(c.byChat, ch.ChatURI)
	if disposed {
		c.disposed[ch.SessionURI] = true
	}
	c.mu.Unlock()
	ch.Lock()
	ch.End()
	t := ch.turn
	ch.turn = nil
	ch.Unlock()
	if t != nil {
		t.Stop()
	}
	c.bus.End(ch.SessionURI)
	c.bus.End(ch.ChatURI)
	return true
}

// List lists the sessions the caller may see (listSessions): their chats,
// and the back sessions the session host holds for them, newest first.
func (c *Chats) List(ctx context.Context, call engine.Call) (ahp.ListSessionsResult, error) {
	who := c.bots.Principal(call.Principal)
	all := c.all()
	if !who.Any() { // their own chats with the bots they may read now, each bot asked once
		reads := map[string]bool{}
		all = slices.DeleteFunc(all, func(ch *chat) bool {
			if !who.Owns(ch.owner) {
				return true
			}
			ok, asked := reads[ch.bot]
			if !asked {
				ok = c.bots.Reads(ctx, who, ch.bot)
				reads[ch.bot] = ok
			}
			return !ok
		})
	}
	items := make(ahp.List[ahp.SessionSummary], 0, len(all))
	for _, ch := range all {
		items = append(items, ch.summary())
	}
	if l, ok := c.host.(interface {
		Summaries(owner string) []ahp.SessionSummary
	}); ok {
		owner := who.Owner(c.hostName)
		if who.Any() && !who.Root {
			owner = ""
		}
		items = append(items, l.Summaries(owner)...)
	}
	sort.SliceStable(items, func(i, j int) bool { return items[i].ModifiedAt > items[j].ModifiedAt })
	return ahp.ListSessionsResult{Items: items}, nil
}

// summary is the chat's listing row.
func (ch *chat) summary() ahp.SessionSummary {
	ss, cs, dropped := ch.State()
	meta := ss.SessionMetadata
	meta.Status = cs.Status
	if len(ss.InputNeeded) > 0 {
		meta.Status = meta.Status.WithActivity(ahp.StatusInputNeeded)
	}
	return ahp.SessionSummary{
		SessionMetadata: meta, Resource: ch.SessionURI, CreatedAt: ch.created, ModifiedAt: cs.ModifiedAt,
		Meta: listingMeta(ss, cs, dropped), DefaultChat: ch.ChatURI,
	}
}

// notified is the owner string root notifications about the chat go
// to besides those who may do anything: its owner's, or none once the
// chat is closed to them.
func (ch *chat) notified() string {
	if ch.closed.Load() {
		return ""
	}
	return ch.owner
}

// listingMeta is the _meta of a chat's listing row: its session's, ss's,
// with turnsMeta added for its chat cs, of whose history dropped ended
// turns are older than those cs holds.
func listingMeta(ss ahp.SessionState, cs ahp.ChatState, dropped int) map[string]any {
	turns := cs.Turns
	n := dropped + len(turns)
	first := ""
	if cs.ActiveTurn != nil {
		n++
		first = cs.ActiveTurn.Message.Text
	}
	if len(turns) > 0 {
		first = turns[0].Message.Text
	}
	info := map[string]any{"turns": n}
	if dropped == 0 && first != "" {
		if r := []rune(first); len(r) > firstMessageRunes {
			first = string(r[:firstMessageRunes]) + "…"
		}
		info["firstMessage"] = first
	}
	out := make(map[string]any, len(ss.Meta)+1)
	maps.Copy(out, ss.Meta)
	out[turnsMeta] = info
	return out
}

// notify sends a root notification about a chat whose owner is owner to
// the root subscribers that may see the chat: its owner, and a principal
// that may do anything (root, *:*), as that principal is now. With no
// users directory every connection that gets in (the host authenticates
// it, as bots.Server does with its local token) is root and hears of
// every chat.
func (c *Chats) notify(owner, method string, params any) {
	var to func(*engine.Subscriber) bool
	if c.directory {
		to = func(sub *engine.Subscriber) bool {
			p := c.bots.Principal(sub.Principal)
			return p.Any() || p.Owns(owner)
		}
	}
	if err := c.bus.NotifyFor(ahp.RootURI, method, params, to); err != nil {
		c.logger.Warn("bot: a root notification did not go out", "method", method, "err", err)
	}
}

// logAt is the place in the log of key of a chat that holds its first n
// lines applied.
func (c *Chats) logAt(key chatlog.Key, n int64) replica.Log {
	l := replica.Log{Logs: c.logs, Key: key, Lines: n}
	if c.sh != nil {
		l.Shared = c.sh
	}
	return l
}

// newChat is the chat of session with bot, whose owner is owner, made at
// created, whose log key holds lines lines; the caller sets its states
// (Reset).
func (c *Chats) newChat(session, bot, owner, created string, key chatlog.Key, lines int64, mark map[string]any) *chat {
	ch := &chat{c: c, bot: bot, owner: owner, created: created, log: c.logAt(key, lines), mark: mark}
	ch.Publisher, ch.SessionURI, ch.ChatURI = c.pub, session, ahp.DefaultChatURI(session)
	return ch
}

// writeLocked appends a line to the chat's log: with shared logs at the
// count of lines the chat holds applied, so that it goes in only when no
// other instance wrote first; otherwise the chat catches up and the
// answer is replica.ErrBehind. Called with ch locked: the write may
// wait on a database, which holds up the chat's writers but not its
// readers (replica.Chat).
func (ch *chat) writeLocked(l logLine, sync bool) error {
	data, err := json.Marshal(l)
	if err != nil {
		return fmt.Errorf("encode log line: %w", err)
	}
	err = ch.log.Append(context.Background(), data, sync)
	if errors.Is(err, replica.ErrBehind) {
		ch.catchUpLocked()
	}
	return err
}

// logLocked appends an action's line to the chat's log. A failed append is
// returned, and reported when the one before it did not fail
// (replica.Log.Failed); the chat goes on in memory.
// replica.ErrBehind is returned as it is: nothing was written, nor applied.
func (ch *chat) logLocked(kind string, a ahp.Action) error {
	if r := ch.repair; r != nil {
		if err := ch.writeLocked(*r, true); err != nil {
			if !errors.Is(err, replica.ErrBehind) {
				ch.c.logger.Warn("bot: a chat log line could not be written", "log", ch.log.Key, "bot", ch.bot, "err", err)
			}
			return err
		}
		ch.repair = nil
	}
	l := logLine{Kind: kind, At: ahp.FormatTime(ch.c.now()), Action: &a, Meta: map[string]any{BotMeta: ch.mark}}
	err := ch.writeLocked(l, replica.Durable(a))
	if err != nil && !errors.Is(err, replica.ErrBehind) && ch.log.Failed() == 1 {
		ch.c.logger.Warn("bot: a chat log line could not be written", "log", ch.log.Key, "bot", ch.bot, "err", err)
	}
	return err
}

// unsavedReason is the sentence a turn ends with when its log line could
// not be written.
func unsavedReason(err error) string {
	if reason, ok := diskfull.Reason(err); ok {
		return "This turn could not be saved: " + reason + ", so its reply would be lost after a restart."
	}
	return "This turn could not be saved: the chat's log could not be written, so its reply would be lost after a restart."
}

// logChatLocked logs a chat action, and answers the action to apply in
// its place: a turn some line of which is not in the log does not end as
// complete, which after a restart would read back without its reply, but
// in chat/error saying why. replica.ErrBehind means nothing was logged: another
// instance wrote first. Called with ch locked.
func (ch *chat) logChatLocked(a ahp.Action) (ahp.Action, error) {
	if a.Type == ahp.ActionChatDraftChanged { // a draft is no turn event
		return a, nil
	}
	if a.Type == ahp.ActionChatTurnStarted {
		ch.unsaved = ""
	}
	unsaved := func(b *ahp.ChatTurnCompleteAction) ahp.Action {
		return ahp.TurnFailed(b.TurnID, time.Duration(b.Duration)*time.Millisecond,
			ahp.ErrorInfo{ErrorType: UnsavedType, Message: ch.unsaved}, false)
	}
	complete, _ := a.Body.(*ahp.ChatTurnCompleteAction)
	if complete != nil && ch.unsaved != "" {
		a, complete = unsaved(complete), nil
	}
	if err := ch.logLocked(replica.LineChat, a); err != nil {
		if errors.Is(err, replica.ErrBehind) {
			return a, err
		}
		ch.c.diskFull(err)
		if ch.unsaved == "" {
			ch.unsaved = unsavedReason(err)
		}
		if complete != nil {
			a = unsaved(complete)
			_ = ch.logLocked(replica.LineChat, a) // a restart reads the turn as interrupted when this fails too
		}
	}
	return a, nil
}

// emitChatLocked logs, applies and publishes a chat action; the session's
// catalogue follows the chat's status. It reports false, having done
// nothing with a, when another instance wrote to the chat's log first:
// the chat has applied what it wrote, and the caller decides again on the
// chat as it is now. Called with ch locked.
func (ch *chat) emitChatLocked(a ahp.Action, origin *engine.Origin) bool {
	a, err := ch.logChatLocked(a)
	if err != nil {
		return false
	}
	ch.applyChatLocked(a, origin)
	ch.observeLocked(a)
	return true
}

// applyChatLocked applies and publishes a chat action that is in the log;
// the session's catalogue and the root listing follow the chat's status.
// Called with ch locked.
func (ch *chat) applyChatLocked(a ahp.Action, origin *engine.Origin) {
	idle := ch.ChatState().ActiveTurn == nil
	change, changed := ch.Apply(a, origin)
	if idle && ch.ChatState().ActiveTurn != nil {
		// A turn begun (or resumed) now: the watcher gives its instance
		// a TTL to take its lease.
		ch.watched, ch.watchedSince = "", ch.c.now()
	}
	if changed {
		ch.c.notify(ch.notified(), "root/sessionSummaryChanged", ahp.SessionSummaryChangedParams{
			Channel: ahp.RootURI, Session: ch.SessionURI, Changes: change,
		})
	}
}

// emitSessionLocked applies and publishes a session action, logging it
// when log is set. Like emitChatLocked it reports false, having done
// nothing, when another instance wrote to the chat's log first. Called
// with ch locked.
func (ch *chat) emitSessionLocked(a ahp.Action, origin *engine.Origin, log bool) bool {
	if log {
		if err := ch.logLocked(replica.LineSession, a); errors.Is(err, replica.ErrBehind) {
			return false
		} // another failure is reported; the chat goes on in memory
	}
	ch.ApplySession(a, origin)
	return true
}

// replay opens and replays every chat the logs hold, as listed (ListLogs,
// started before). A turn a log
// shows begun and never ended is ended as interrupted, in the log too, with
// an error chat/turnResume may resume; New then starts the messages
// that waited behind it.
func (c *Chats) replay(listed *Listing) error {
	keys, err := listed.Wait()
	if err != nil {
		return err
	}
	for _, key := range keys {
		if ch := c.load(key, false); ch != nil {
			c.bySession[ch.SessionURI] = ch
			c.byChat[ch.ChatURI] = ch
		}
	}
	return nil
}

// Listing is a listing of the chats' logs made in the background
// (ListLogs); New waits for its answer.
type Listing struct {
	done chan struct{}
	keys []chatlog.Key
	err  error
}

// ListLogs starts listing the chats' logs in logs, on a goroutine that ends
// with the listing: whoever calls it waits for the answer (Wait), which
// New does, error or not. A service lists them while it checks its bots,
// each a pass over every bot's folder.
func ListLogs(logs chatlog.Logs) *Listing {
	l := &Listing{done: make(chan struct{})}
	go func() {
		defer close(l.done)
		ctx, cancel := context.WithTimeout(context.Background(), replica.Wait)
		defer cancel()
		l.keys, l.err = logs.List(ctx, chatlog.Chat)
	}()
	return l
}

// Wait waits for the listing to end and answers it.
func (l *Listing) Wait() ([]chatlog.Key, error) {
	<-l.done
	return l.keys, l.err
}

// load reads the log of key and returns its chat, nil when it holds none.
// A turn the log shows begun and never ended is ended as interrupted,
// unless live: the chat is followed while another instance writes it.
func (c *Chats) load(key chatlog.Key, live bool) *chat {
	lines, n, bad, err := readLog(c.logs, key)
	for _, b := range bad {
		c.logger.Warn("bot: chat log", "log", key, "problem", b)
	}
	if err != nil {
		if !live || !errors.Is(err, fs.ErrNotExist) { // a followed log may be removed meanwhile
			c.logger.Warn("bot: a chat log could not be read", "log", key, "err", err)
		}
		return nil
	}
	if len(lines) == 0 || lines[0].Kind != replica.LineOpen || lines[0].Session != key.Session {
		c.logger.Warn("bot: a chat log does not open a chat; it is left out", "log", key)
		return nil
	}
	o := lines[0]
	mark, _ := o.Meta[BotMeta].(map[string]any)
	ch := c.newChat(o.Session, o.Bot, o.Owner, o.CreatedAt, key, n, mark)
	r := replica.Replay{Last: o.At, Keep: c.pub.Keep, Paged: true}
	r.Session, r.Chat = initialStates(o.Session, ch.ChatURI, o.Title, o.Dir, o.CreatedAt, mark)
	for _, l := range lines[1:] {
		if m, ok := l.Meta[BotMeta].(map[string]any); ok {
			ch.mark = m
		}
		r.Fold(l.Kind, l.At, l.Action)
	}
	r.Session.Meta = map[string]any{BotMeta: ch.mark}
	// Resumable: chat/turnResume wakes the back session again with the
	// turn's message (VS Code's Keep Going).
	if a, ok := r.Interrupted(true); ok && !live {
		if c.shared {
			// Another instance may be running the turn: the log gets
			// the line only when this one writes to the chat.
			ch.repair = &logLine{Kind: replica.LineChat, At: ahp.FormatTime(c.now()), Action: &a, Meta: map[string]any{BotMeta: ch.mark}}
		} else {
			_ = ch.logLocked(replica.LineChat, a) // reported; it reads back as interrupted again
		}
		r.Apply(a)
		c.meters.turns.Inc(outcomeInterrupted)
	}
	ch.Reset(r.States(ch.ChatURI))
	ch.head.Store(n)
	return ch
}

// newTurnID is the id of a turn the host starts from the queue.
func newTurnID() string { return strings.ToLower(ulid.Make().String()) }
