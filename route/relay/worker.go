package relay

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/client"
	"github.com/agenthost/bots/errcode"
	"github.com/agenthost/bots/internal/tick"
	"github.com/agenthost/bots/lease"
	"github.com/agenthost/bots/route"
)

// worker keeps one connection live and passes its messages on.
type worker struct {
	r      *Relay
	conn   route.Connection
	routes atomic.Pointer[[]route.Route] // the enabled routes on conn

	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	turns  sync.WaitGroup // the goroutines following turns

	mu    sync.Mutex
	live  route.Conn            // nil while (re)connecting
	up    chan struct{}         // closed, and replaced, when live changes
	chats map[string]*chatState // by chat key
	// told are the senders a group was told it passes on nothing from
	// (toldKey), and when: in a room the bot would otherwise answer
	// every line a stranger says, so it tells them once a tellAgain.
	told map[toldKey]time.Time
}

// toldKey is a group, a sender it was told of ("" for a room that hides
// who speaks) and what the route did with them: a route that came to
// pair its strangers tells them again, with a code.
type toldKey struct {
	scope    route.Scope
	identity string
	unmapped route.Unmapped
}

// tellAgain is how long a group is not told again of a stranger: as long
// as a pairing code works, so one whose code ran out gets another.
const tellAgain = PairTTL

// maxTold bounds what a worker remembers telling; past it, it forgets
// and tells again.
const maxTold = 10_000

// wasTold reports whether k's group was told of its sender within
// tellAgain.
func (w *worker) wasTold(k toldKey) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	at, ok := w.told[k]
	return ok && time.Since(at) < tellAgain
}

// tell notes that k's group was told of its sender now.
func (w *worker) tell(k toldKey) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.told) >= maxTold {
		clear(w.told)
	}
	w.told[k] = time.Now()
}

// chatState is a person's chat of one scope, as the worker drives it.
type chatState struct {
	key    string
	person string
	bot    string
	c      *client.Client
	chat   *client.Chat
	// prompt is the question or approval the chat waits on, answered by
	// the person's next message; nil when none.
	prompt *prompt
}

// prompt is what a chat waits for the person to answer.
type prompt struct {
	id       string // the Question's id sent to the network
	question *ahp.ChatInputRequest
	turn     string // an approval's turn and tool call
	call     string
}

func newWorker(r *Relay, c route.Connection) *worker {
	ctx, cancel := context.WithCancel(r.ctx)
	return &worker{r: r, conn: c, ctx: ctx, cancel: cancel, done: make(chan struct{}),
		up: make(chan struct{}), chats: map[string]*chatState{}, told: map[toldKey]time.Time{}}
}

func (w *worker) start() { go w.loop() }

// loop dials, receives until the connection fails, and dials again with
// backoff, until the worker stops.
func (w *worker) loop() {
	defer close(w.done)
	defer w.turns.Wait()
	id := w.conn.ID
	backoff := w.r.cfg.MinBackoff
	for w.ctx.Err() == nil {
		held, release := w.hold()
		if held == nil {
			return
		}
		w.r.setState(id, route.Connecting, "")
		conn, err := w.dial()
		if err != nil {
			w.r.setState(id, route.Failing, err.Error())
			w.r.log.Warn("cannot connect", "connection", id, "err", err, "retry", backoff)
			t := time.NewTimer(backoff)
			select {
			case <-held.Done():
				t.Stop()
			case <-t.C:
			}
			release()
			backoff = min(2*backoff, w.r.cfg.MaxBackoff)
			continue
		}
		backoff = w.r.cfg.MinBackoff
		w.r.setState(id, route.Connected, "")
		w.setLive(conn)
		err = w.receive(held, conn)
		w.setLive(nil)
		_ = conn.Close()
		lost := held.Err() != nil && w.ctx.Err() == nil
		release()
		switch {
		case lost:
			w.r.log.Warn("another instance took the connection over", "connection", id)
		case errors.Is(err, route.ErrRedial):
			w.r.log.Info("the network asked for a new connection", "connection", id, "why", err)
		case w.ctx.Err() == nil:
			w.r.setState(id, route.Failing, fmt.Sprintf("the connection dropped: %v", err))
			w.r.log.Warn("connection dropped", "connection", id, "err", err)
		}
	}
}

// hold waits until this instance may hold the connection: at once without
// leases, else once it holds the connection's lease, which it renews
// until release is called. The context it answers ends when the worker
// stops or the lease is lost; it is nil when the worker stopped first.
func (w *worker) hold() (held context.Context, release func()) {
	if w.r.cfg.Leases == nil {
		return w.ctx, func() {}
	}
	ls, holder, ttl := w.r.cfg.Leases, w.r.cfg.Holder, w.r.cfg.LeaseTTL
	key := "route:" + w.conn.ID
	var l lease.Lease
	for {
		got, ok, err := ls.Acquire(w.ctx, key, holder, ttl)
		if err == nil && ok {
			l = got
			break
		}
		switch {
		case err != nil:
			w.r.setState(w.conn.ID, route.Failing, fmt.Sprintf("cannot take its lease: %v", err))
		default:
			w.r.setState(w.conn.ID, route.Elsewhere, fmt.Sprintf("the instance %s holds it", got.Holder))
		}
		t := time.NewTimer(ttl / 5)
		select {
		case <-w.ctx.Done():
			t.Stop()
			return nil, nil
		case <-t.C:
		}
	}
	ctx, cancel := context.WithCancel(w.ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick.Every(ctx, ttl/3, func() bool {
			err := ls.Renew(ctx, key, holder, l.Token, ttl)
			if errors.Is(err, lease.ErrLost) {
				cancel()
				return false
			}
			if err != nil && ctx.Err() == nil {
				w.r.log.Warn("cannot renew the connection's lease", "connection", w.conn.ID, "err", err)
			}
			return true
		})
	}()
	return ctx, func() {
		cancel()
		<-done
		rctx, stop := context.WithTimeout(context.WithoutCancel(w.ctx), ttl/3)
		defer stop()
		_ = ls.Release(rctx, key, holder, l.Token)
	}
}

// dial resolves the connection's secrets and logs in.
func (w *worker) dial() (route.Conn, error) {
	secrets := map[string]string{}
	for name, ref := range w.conn.Secrets {
		if w.r.cfg.Secret == nil {
			return nil, fmt.Errorf("the connection needs its %s, and this host has no vault to resolve %q", name, ref)
		}
		v, err := w.r.cfg.Secret(w.ctx, ref)
		if err != nil {
			return nil, fmt.Errorf("cannot resolve its %s (%s): %w", name, ref, err)
		}
		secrets[name] = v
	}
	ctx, cancel := context.WithTimeout(w.ctx, 30*time.Second)
	defer cancel()
	return w.r.networks[w.conn.Network].Dial(ctx, route.Dial{Connection: w.conn.ID,
		Settings: w.conn.Settings, Secrets: secrets, Logger: w.r.log.With("connection", w.conn.ID)})
}

func (w *worker) setLive(c route.Conn) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.live = c
	close(w.up)
	w.up = make(chan struct{})
}

// current returns the live connection, waiting while it reconnects.
func (w *worker) current(ctx context.Context) (route.Conn, error) {
	for {
		w.mu.Lock()
		c, up := w.live, w.up
		w.mu.Unlock()
		if c != nil {
			return c, nil
		}
		select {
		case <-up:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// receive passes on each message until the connection fails or ctx
// ends.
func (w *worker) receive(ctx context.Context, conn route.Conn) error {
	for {
		m, err := conn.Receive(ctx)
		if err != nil {
			return err
		}
		w.handle(m)
	}
}

// match returns the narrowest enabled route whose scope holds s.
func match(routes []route.Route, s route.Scope) (route.Route, bool) {
	best, rank := route.Route{}, 0
	for _, rt := range routes {
		r := 0
		switch rt.Scope.Kind {
		case route.Direct:
			if s.Kind == route.Direct && (rt.Scope.ID == "" || route.SameID(rt.Scope.ID, s.ID)) {
				r = 1
				if rt.Scope.ID != "" {
					r = 3
				}
			}
		case route.Group:
			if (s.Kind == route.Group || s.Kind == route.Thread) && route.SameID(rt.Scope.ID, s.ID) {
				r = 2
			}
		case route.Thread:
			if s.Kind == route.Thread && rt.Scope.Is(s) {
				r = 4
			}
		}
		if r > rank || r == rank && r > 0 && rt.ID < best.ID {
			best, rank = rt, r
		}
	}
	return best, rank > 0
}

// handle passes one message on.
func (w *worker) handle(m route.Message) {
	rt, ok := match(*w.routes.Load(), m.Scope)
	if !ok {
		return
	}
	if !w.first(m.ID) {
		w.r.log.Debug("a message passed on before came again: not passed on twice", "connection", w.conn.ID, "id", m.ID)
		w.took(resultRepeated)
		return
	}
	if m.From == "" {
		w.took(resultUnnamed)
		// A group is told once a tellAgain, whoever speaks: where a room
		// hides its members, every line is from someone unnamed.
		k := toldKey{scope: m.Scope}
		group := m.Scope.Kind != route.Direct
		if group && w.wasTold(k) {
			return
		}
		why := m.Unnamed
		if why == "" {
			why = "I cannot tell who anyone is here: this room does not show me its members' addresses, so I pass on nothing said in it. Write to me directly, or ask the room's owner to show members' addresses."
		}
		w.say(m.Scope, why)
		if group {
			w.tell(k)
		}
		return
	}
	identity, broad := w.conn.Identity(strings.TrimPrefix(m.From, w.conn.Network+":"))
	person, ok := w.r.cfg.People.Person(identity)
	if !ok && broad != "" {
		person, ok = w.r.cfg.People.Person(broad)
	}
	if !ok {
		person, ok = w.r.paired(w.ctx, identity)
	}
	if !ok {
		w.took(resultStranger)
		// A stranger in a group is told once a tellAgain; in a direct
		// message, at every message, as a conversation goes.
		k := toldKey{scope: m.Scope, identity: identity, unmapped: rt.Unmapped}
		group := m.Scope.Kind != route.Direct
		if group && w.wasTold(k) {
			return
		}
		told := true
		if rt.Unmapped == route.Pair {
			told = w.pair(rt, m, identity)
		} else {
			w.say(m.Scope, fmt.Sprintf("I pass on messages only from people this host knows: ask its operator to add %q to your identities in its users file.", identity))
		}
		if group && told {
			w.tell(k)
		}
		return
	}
	key := chatKey(rt, m.Scope, person)
	cs, err := w.chat(key, person, rt.Bot)
	if err != nil {
		w.took(resultFailed)
		w.say(m.Scope, fmt.Sprintf("I could not reach the bot %s for you: %s", rt.Bot, sentence(err)))
		return
	}
	if w.command(cs, m) {
		w.took(resultPassed)
		return
	}
	msg := ahp.UserMessage(m.Text)
	msg.Meta = map[string]any{route.ViaMeta: via(w.conn.Network, m), route.RouteMeta: rt.ID}
	t, err := cs.chat.SendMessage(w.ctx, msg)
	if err != nil {
		w.took(resultFailed)
		w.forget(cs)
		w.say(m.Scope, fmt.Sprintf("I could not pass that on to the bot %s: %s", rt.Bot, sentence(err)))
		return
	}
	w.took(resultPassed)
	w.turns.Add(1)
	go w.follow(cs, m.Scope, t)
}

// via says where a message was said, for the context block's via line:
// the sender as the network names them, and the scope.
func via(network string, m route.Message) string {
	who := m.From
	if m.Name != "" && m.Name != strings.TrimPrefix(m.From, network+":") {
		who += " (" + m.Name + ")"
	}
	switch m.Scope.Kind {
	case route.Group:
		return who + " in " + m.Scope.ID
	case route.Thread:
		return who + " in a thread of " + m.Scope.ID
	}
	return who + ", a direct message on " + network
}

// first records that the message id was passed on and reports whether it
// was the first time. A message without an id always is.
func (w *worker) first(id string) bool {
	if id == "" {
		return true
	}
	first, err := see(w.ctx, w.r.mem, w.conn.ID, id)
	if err != nil {
		// better answer a message again than lose it
		w.r.log.Warn("cannot note a message passed on", "connection", w.conn.ID, "err", err)
		return true
	}
	return first
}

// chatKey names the chat of a person on a route's scope: one chat per
// person and scope (and thread), so each person's chat is theirs alone,
// as on the page.
func chatKey(rt route.Route, s route.Scope, person string) string {
	return strings.Join([]string{rt.ID, string(s.Kind), s.ID, s.Thread, person}, "\x1f")
}

// chat returns the chat of key, joining the one remembered or opening a
// new one with the bot.
func (w *worker) chat(key, person, bot string) (*chatState, error) {
	w.mu.Lock()
	cs := w.chats[key]
	w.mu.Unlock()
	if cs != nil && cs.bot == bot {
		return cs, nil
	}
	session, err := chatOf(w.ctx, w.r.mem, w.conn.ID, key)
	if err != nil {
		w.r.log.Warn("the chat of a scope cannot be read back: a new one opens", "connection", w.conn.ID, "err", err)
	}
	c, err := w.r.client(person)
	if err != nil {
		return nil, err
	}
	var ch *client.Chat
	if session != "" {
		ch, err = c.JoinChat(w.ctx, session)
	}
	if session == "" || err != nil {
		ch, err = c.OpenChat(w.ctx, bot)
	}
	if err != nil {
		if errcode.Of(err) != errcode.PermissionDenied && errcode.Of(err) != errcode.NotFound {
			w.r.dropClient(person, c)
		}
		return nil, err
	}
	cs = &chatState{key: key, person: person, bot: bot, c: c, chat: ch}
	w.mu.Lock()
	w.chats[key] = cs
	w.mu.Unlock()
	if session != ch.Session() {
		if err := rememberChat(w.ctx, w.r.mem, w.conn.ID, key, ch.Session()); err != nil {
			w.r.log.Warn("cannot remember the chat of a scope", "connection", w.conn.ID, "err", err)
		}
	}
	return cs, nil
}

// forget drops a chat that failed, and its client, so the next message
// opens them again (and is judged anew).
func (w *worker) forget(cs *chatState) {
	w.mu.Lock()
	if w.chats[cs.key] == cs {
		delete(w.chats, cs.key)
	}
	w.mu.Unlock()
	w.r.dropClient(cs.person, cs.c)
}

// command handles what the person typed for the relay rather than the
// bot: /stop, and the answer to a prompt. It reports whether the message
// was one.
func (w *worker) command(cs *chatState, m route.Message) bool {
	text := strings.TrimSpace(m.Text)
	if text == "/stop" {
		s := cs.chat.State()
		if s.ActiveTurn == nil {
			w.say(m.Scope, "Nothing is running.")
			return true
		}
		if err := cs.chat.Stop(w.ctx, s.ActiveTurn.ID); err != nil {
			w.say(m.Scope, "I could not stop it: "+sentence(err))
		}
		return true
	}
	w.mu.Lock()
	p := cs.prompt
	w.mu.Unlock()
	if p == nil {
		return false
	}
	var err error
	switch {
	case m.Answer != nil && m.Answer.Question != p.id:
		w.say(m.Scope, "That question is no longer asked.")
		return true
	case p.question == nil:
		approved, ok := approval(text, m.Answer)
		if !ok {
			w.say(m.Scope, "Reply /approve or /deny (or 1 or 2).")
			return true
		}
		err = cs.chat.Approve(w.ctx, p.turn, p.call, approved)
	default:
		answers, ok := answer(p.question, text, m.Answer)
		if !ok {
			w.say(m.Scope, "Reply with the number of an option.")
			return true
		}
		if answers == nil {
			err = cs.chat.Decline(w.ctx, p.question.ID)
		} else {
			err = cs.chat.Answer(w.ctx, p.question.ID, answers)
		}
	}
	w.mu.Lock()
	if cs.prompt == p {
		cs.prompt = nil
	}
	w.mu.Unlock()
	if err != nil {
		w.say(m.Scope, "I could not pass your answer on: "+sentence(err))
	}
	return true
}

// approval reads an answer to an approval: /approve, /deny, 1 or 2, or a
// button.
func approval(text string, a *route.Answer) (approved, ok bool) {
	if a != nil {
		text = a.Option
	}
	switch strings.ToLower(text) {
	case "/approve", "1", "approve", "yes":
		return true, true
	case "/deny", "2", "deny", "no":
		return false, true
	}
	return false, false
}

// answer reads an answer to a question of one select or text question:
// the number or id of an option, or free text where the question takes
// it. /deny declines (nil answers).
func answer(req *ahp.ChatInputRequest, text string, a *route.Answer) (map[string]string, bool) {
	if len(req.Questions) == 0 {
		return nil, false
	}
	q := req.Questions[0]
	if a != nil {
		text = a.Option
	}
	if text == "/deny" {
		return nil, true
	}
	if len(q.Options) > 0 {
		if n, err := strconv.Atoi(text); err == nil && n >= 1 && n <= len(q.Options) {
			return map[string]string{q.ID: q.Options[n-1].ID}, true
		}
		for _, o := range q.Options {
			if o.ID == text {
				return map[string]string{q.ID: o.ID}, true
			}
		}
		if q.AllowFreeformInput == nil || !*q.AllowFreeformInput {
			return nil, false
		}
	}
	if text == "" {
		return nil, false
	}
	return map[string]string{q.ID: text}, true
}

// follow sends a turn's replies, questions and approvals to the scope.
func (w *worker) follow(cs *chatState, to route.Scope, t *client.Turn) {
	defer w.turns.Done()
	sent := map[string]string{}  // markdown part id → what was sent
	ids := map[string][]string{} // markdown part id → the network's ids of what was sent
	post := func(id, text string) {
		if text == "" || sent[id] == text {
			return
		}
		if old, ok := sent[id]; ok && strings.HasPrefix(text, old) {
			if n := ids[id]; len(n) == 1 && n[0] != "" {
				if err := w.edit(to, n[0], text); err == nil {
					sent[id] = text
					return
				}
			}
			text = strings.TrimPrefix(text, old)
		}
		ids[id] = w.say(to, text)
		sent[id] += text
	}
	for e, err := range t.Events(w.ctx) {
		if err != nil {
			if w.ctx.Err() == nil {
				w.forget(cs)
				w.say(to, "I lost the chat with the bot: "+sentence(err))
			}
			return
		}
		switch e.Kind {
		case client.EventPart:
			if md := e.Part.Markdown; md != nil {
				post(md.ID, md.Content)
			}
		case client.EventQuestion:
			w.ask(cs, to, &prompt{id: e.Question.ID, question: e.Question}, questionOf(e.Question))
		case client.EventApproval:
			turn, _ := t.ID(w.ctx)
			name := cmp.Or(e.ToolCall.DisplayName, e.ToolCall.ToolName)
			w.ask(cs, to, &prompt{id: e.ToolCall.ToolCallID, turn: turn, call: e.ToolCall.ToolCallID},
				route.Question{ID: e.ToolCall.ToolCallID, Markdown: fmt.Sprintf("The bot asks to run %s: approve it?", name),
					Options: []route.Option{{ID: "/approve", Label: "Approve"}, {ID: "/deny", Label: "Deny"}}})
		case client.EventEnd:
			w.mu.Lock()
			cs.prompt = nil
			w.mu.Unlock()
			for _, p := range e.Turn.ResponseParts {
				if p.Markdown != nil {
					post(p.Markdown.ID, p.Markdown.Content)
				}
				if p.Error != nil {
					w.say(to, "The turn failed: "+p.Error.Error.Message)
				}
			}
			if e.Turn.State == ahp.TurnStateCancelled {
				w.say(to, "Stopped.")
			}
			return
		}
	}
}

// questionOf is an input request as a network's question: its message,
// and the options of its first question.
func questionOf(req *ahp.ChatInputRequest) route.Question {
	q := route.Question{ID: req.ID, Markdown: req.Message}
	if len(req.Questions) > 0 {
		first := req.Questions[0]
		q.Markdown = strings.TrimSpace(strings.Join([]string{req.Message, first.Title, first.Message}, "\n\n"))
		for _, o := range first.Options {
			q.Options = append(q.Options, route.Option{ID: o.ID, Label: o.Label})
		}
	}
	return q
}

// ask sends a question and makes it the chat's prompt.
func (w *worker) ask(cs *chatState, to route.Scope, p *prompt, q route.Question) {
	w.mu.Lock()
	cs.prompt = p
	w.mu.Unlock()
	conn, err := w.current(w.ctx)
	if err != nil {
		return
	}
	q.Markdown = w.r.scrub(q.Markdown)
	for i := range q.Options {
		q.Options[i].Label = w.r.scrub(q.Options[i].Label)
	}
	if _, err := conn.Ask(w.ctx, to, q); err != nil {
		w.r.log.Warn("cannot ask in the network", "connection", w.conn.ID, "err", err)
	}
}

// pair gives the unmapped sender of m, identity on the connection, a
// pairing code, in a direct message: whoever enters a code takes the
// account, so it is never said where others read it. In a group, the
// group hears only that a code was sent, or, when the network would not
// take a direct message, to write one first. It reports whether the
// sender has a code now.
func (w *worker) pair(rt route.Route, m route.Message, identity string) bool {
	code, err := w.r.code(w.ctx, identity)
	if err != nil {
		w.r.log.Warn("relay: a pairing code cannot be kept", "err", err)
		w.say(m.Scope, "I cannot give you a pairing code now; try again later.")
		return false
	}
	text := fmt.Sprintf("To talk to the bot %s, pair this account with you: on this host's page, sign in and enter the code %s under \"Pair a chat account\" (it works for %d minutes; keep it to yourself). Until then I pass on nothing you write.", rt.Bot, code, int(PairTTL.Minutes()))
	if m.Scope.Kind == route.Direct {
		w.say(m.Scope, text)
		return true
	}
	to := route.Scope{Kind: route.Direct, ID: cmp.Or(m.ReplyTo, strings.TrimPrefix(m.From, w.conn.Network+":"))}
	if _, err := w.send(to, text); err != nil {
		w.r.log.Info("relay: a pairing code could not be sent in a direct message", "connection", w.conn.ID, "err", err)
		w.say(m.Scope, "I pass on nothing you write here until you pair this account with you, and I could not write to you directly to give you a code: write to me directly once, then again here.")
		return false
	}
	w.say(m.Scope, "I pass on nothing you write here until you pair this account with you: I sent you a pairing code in a direct message.")
	return true
}

// say sends text to a scope, scrubbed, and returns the network's ids of
// what it sent; a failure is logged.
func (w *worker) say(to route.Scope, text string) []string {
	ids, err := w.send(to, text)
	if err != nil {
		w.r.log.Warn("cannot send to the network", "connection", w.conn.ID, "err", err)
	}
	return ids
}

// send is say that answers its failure instead of logging it; no
// connection now is no failure (nothing to send on, and the connection's
// own state says why).
func (w *worker) send(to route.Scope, text string) ([]string, error) {
	conn, err := w.current(w.ctx)
	if err != nil {
		return nil, nil
	}
	return conn.Send(w.ctx, to, w.r.scrub(text))
}

func (w *worker) edit(to route.Scope, id, text string) error {
	conn, err := w.current(w.ctx)
	if err != nil {
		return err
	}
	return conn.Edit(w.ctx, to, id, w.r.scrub(text))
}

// sentence is an error as a person reads it in a network: its message,
// without the error code's prefix where it has one.
func sentence(err error) string {
	var e *errcode.Error
	if errors.As(err, &e) && e.Message != "" {
		return e.Message
	}
	return err.Error()
}
