package bot_test

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/bots/access"
	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/bot"
	"github.com/agenthost/bots/chatlog"
	"github.com/agenthost/bots/chatlog/memchatlog"
	"github.com/agenthost/bots/engine"
	"github.com/agenthost/bots/lease"
	"github.com/agenthost/bots/record/memrecord"
	"github.com/agenthost/bots/transport"
	"github.com/agenthost/bots/wake"
	"github.com/agenthost/bots/wake/echo"
	"github.com/agenthost/bots/wake/local"
)

// chatUsers is a users directory: a token is the user's id.
type chatUsers map[string]access.Principal

func (u chatUsers) Authenticate(token string) (access.Principal, bool) {
	if token == "root" {
		return access.RootPrincipal(), true
	}
	p, ok := u[token]
	return p, ok
}

func (u chatUsers) Principal(id string) (access.Principal, bool) {
	p, ok := u[id]
	return p, ok
}

// chatEnv is a service with a local.Host running echo, served by a
// transport.Server, on folders that survive a restart.
type chatEnv struct {
	t         testing.TB
	base      string
	store     *memrecord.Store
	users     bot.Users
	options   bot.Options
	svc       *bot.Service
	host      *local.Host
	srv       *transport.Server
	configDir string
	// logs, leases and holder, when set, are shared with sibling envs,
	// as instances on one database share them. Shared leases live a
	// second (sharedTTL), so that a dead instance's turn is ended soon.
	logs   chatlog.Logs
	leases lease.Leases
	holder string
}

func newChatEnv(t testing.TB, opts bot.Options) *chatEnv {
	t.Helper()
	e := &chatEnv{t: t, base: t.TempDir(), store: memrecord.New(), options: opts}
	e.configDir = filepath.Join(e.base, "config")
	e.options.Root = filepath.Join(e.base, "bots")
	e.users = chatUsers{
		"soft":   {User: "soft", Grants: []string{"bot:put", "session:create"}},
		"mate":   {User: "mate", Grants: []string{"bot:get", "session:create"}},
		"reader": {User: "reader", Grants: []string{"bot:get"}},
	}
	e.start()
	return e
}

// sharedTTL is the time to live of the leases shared envs share.
const sharedTTL = time.Second

// newSharedChatEnv is a chat env whose logs are in memory and whose
// leases are leases, for siblings to share.
func newSharedChatEnv(t testing.TB, leases lease.Leases) *chatEnv {
	t.Helper()
	return newSharedChatEnvOn(t, &memchatlog.Logs{}, leases)
}

// newSharedChatEnvOn is newSharedChatEnv on the shared logs logs.
func newSharedChatEnvOn(t testing.TB, logs chatlog.Shared, leases lease.Leases) *chatEnv {
	t.Helper()
	e := &chatEnv{t: t, base: t.TempDir(), store: memrecord.New(), logs: logs, leases: leases, holder: "first"}
	e.configDir = filepath.Join(e.base, "config")
	e.options.Root = filepath.Join(e.base, "bots")
	e.users = chatUsers{"soft": {User: "soft", Grants: []string{"bot:put", "session:create"}}}
	e.start()
	return e
}

// sibling starts another instance on e's store, root, logs and leases,
// with a configuration folder of its own.
func (e *chatEnv) sibling(holder string) *chatEnv {
	e.t.Helper()
	s := &chatEnv{t: e.t, base: e.t.TempDir(), store: e.store, users: e.users, options: e.options,
		logs: e.logs, leases: e.leases, holder: holder}
	s.configDir = filepath.Join(s.base, "config")
	s.start()
	return s
}

// start starts (or starts again) the service over the same store and
// folders.
func (e *chatEnv) start() {
	t := e.t
	t.Helper()
	bus := engine.NewBus(nil)
	h, err := local.New(local.Config{Bus: bus, Harnesses: map[string]wake.Harness{echo.Provider: echo.Harness{}},
		Logs: e.logs, Shared: e.leases != nil})
	if err != nil {
		t.Fatal(err)
	}
	var ttl time.Duration // the default, with no leases
	if e.leases != nil {
		ttl = sharedTTL
	}
	svc, err := bot.New(context.Background(), bot.Config{
		Store: e.store, ConfigDir: e.configDir, HostName: "testhost", Options: e.options,
		PersonaIn: bot.PersonaInFiles, Users: e.users, Bus: bus, Sessions: h, DefaultAgent: echo.Provider,
		Logs: e.logs, Leases: e.leases, Holder: e.holder, LeaseTTL: ttl,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := transport.New(transport.Config{Host: svc, Bus: bus})
	if err != nil {
		t.Fatal(err)
	}
	e.svc, e.host, e.srv = svc, h, srv
	t.Cleanup(e.stop)
}

// stop stops the service, as a process going away would.
func (e *chatEnv) stop() {
	e.srv.Close()
	e.svc.Close()
	e.host.Close()
}

func (e *chatEnv) makeBot(t testing.TB, slug, body string) {
	t.Helper()
	if _, err := e.svc.Make(context.Background(), access.Principal{User: "soft", Grants: []string{"bot:put"}}, slug, []byte(body)); err != nil {
		t.Fatal(err)
	}
}

// rpcErr is a JSON-RPC error.
type rpcErr struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

func (e *rpcErr) Error() string { return fmt.Sprintf("%d %s", e.Code, e.Message) }

// chatClient is an AHP client over a Pipe that keeps every subscribed
// channel's state by applying the actions it receives with the reducers.
type chatClient struct {
	t    testing.TB
	conn *transport.Conn
	ctx  context.Context

	mu       sync.Mutex
	nextID   int
	seq      int64
	waiting  map[int]chan json.RawMessage
	hooks    map[int]func(result json.RawMessage)
	sessions map[string]ahp.SessionState
	chats    map[string]ahp.ChatState
	rejected []string
	notes    []string // notifications heard: "method session"
	ended    []string // engine.SubscriptionEnded heard: "channel: reason"
	changed  chan struct{}
	done     chan struct{} // closed when the connection has ended
}

func (e *chatEnv) connect(t testing.TB, token string) *chatClient {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	conn, err := e.srv.Pipe(ctx, token)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	c := &chatClient{t: t, conn: conn, ctx: ctx, waiting: map[int]chan json.RawMessage{}, hooks: map[int]func(json.RawMessage){},
		sessions: map[string]ahp.SessionState{}, chats: map[string]ahp.ChatState{}, changed: make(chan struct{}, 1), done: make(chan struct{})}
	t.Cleanup(func() { conn.Close(); cancel() })
	go c.read()
	clientSeq.Lock()
	clientSeq.n++
	id := fmt.Sprint("c-", token, "-", clientSeq.n)
	clientSeq.Unlock()
	c.call("initialize", map[string]any{"channel": ahp.RootURI, "protocolVersions": []string{"1.1.0"}, "clientId": id}, nil)
	return c
}

func (c *chatClient) read() {
	defer close(c.done)
	for {
		data, err := c.conn.Recv(c.ctx)
		if err != nil {
			return
		}
		var m struct {
			ID     *int            `json:"id"`
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if json.Unmarshal(data, &m) != nil {
			continue
		}
		c.mu.Lock()
		switch {
		case m.ID != nil:
			if hook := c.hooks[*m.ID]; hook != nil {
				delete(c.hooks, *m.ID)
				var res struct {
					Result json.RawMessage `json:"result"`
				}
				if json.Unmarshal(data, &res) == nil && res.Result != nil {
					hook(res.Result)
				}
			}
			if ch := c.waiting[*m.ID]; ch != nil {
				delete(c.waiting, *m.ID)
				ch <- data
			}
		case m.Method == "action":
			var env ahp.ActionEnvelope
			if json.Unmarshal(m.Params, &env) == nil {
				c.applyLocked(env)
			}
		default:
			var p struct {
				Channel string `json:"channel"`
				Reason  string `json:"reason"`
				Session string `json:"session"`
				Summary struct {
					Resource string `json:"resource"`
				} `json:"summary"`
			}
			json.Unmarshal(m.Params, &p)
			if m.Method == engine.SubscriptionEnded {
				c.ended = append(c.ended, p.Channel+": "+p.Reason)
				break
			}
			c.notes = append(c.notes, m.Method+" "+p.Session+p.Summary.Resource)
		}
		c.mu.Unlock()
		select {
		case c.changed <- struct{}{}:
		default:
		}
	}
}

func (c *chatClient) applyLocked(env ahp.ActionEnvelope) {
	if env.RejectionReason != "" {
		c.rejected = append(c.rejected, env.RejectionReason)
		return
	}
	if env.ServerSeq <= c.seq {
		c.t.Errorf("serverSeq %d after %d", env.ServerSeq, c.seq)
	}
	c.seq = env.ServerSeq
	if s, ok := c.sessions[env.Channel]; ok {
		c.sessions[env.Channel] = ahp.ApplySession(s, env.Action)
	}
	if s, ok := c.chats[env.Channel]; ok {
		c.chats[env.Channel] = ahp.ApplyChat(s, env.Action)
	}
}

// call sends a request and decodes its result into out; it returns the
// error the server answered.
func (c *chatClient) call(method string, params any, out any) *rpcErr {
	c.t.Helper()
	return c.callHook(method, params, out, nil)
}

// callHook is call with hook run on the result by the reader, before it
// reads the next message.
func (c *chatClient) callHook(method string, params any, out any, hook func(json.RawMessage)) *rpcErr {
	c.t.Helper()
	c.mu.Lock()
	c.nextID++
	id := c.nextID
	ch := make(chan json.RawMessage, 1)
	c.waiting[id] = ch
	if hook != nil {
		c.hooks[id] = hook
	}
	c.mu.Unlock()
	req, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err := c.conn.Send(c.ctx, req); err != nil {
		c.t.Fatal(err)
	}
	select {
	case data := <-ch:
		var res struct {
			Result json.RawMessage `json:"result"`
			Error  *rpcErr         `json:"error"`
		}
		if err := json.Unmarshal(data, &res); err != nil {
			c.t.Fatal(err)
		}
		if res.Error != nil {
			return res.Error
		}
		if out != nil {
			if err := json.Unmarshal(res.Result, out); err != nil {
				c.t.Fatalf("%s result %s: %v", method, res.Result, err)
			}
		}
		return nil
	case <-time.After(10 * time.Second):
		c.t.Fatalf("no answer to %s", method)
		return nil
	}
}

func (c *chatClient) mustCall(method string, params any, out any) {
	c.t.Helper()
	if err := c.call(method, params, out); err != nil {
		c.t.Fatalf("%s: %v", method, err)
	}
}

// open makes a chat with the bot and subscribes to its session and chat;
// it returns the session and chat URIs.
func (c *chatClient) open(session, slug string) (string, string) {
	c.t.Helper()
	c.mustCall("createSession", map[string]any{"channel": session, "provider": bot.ChatProvider, "config": map[string]any{"bot": slug}}, nil)
	chat := ahp.DefaultChatURI(session)
	c.subscribe(session)
	c.subscribe(chat)
	return session, chat
}

// subscribe subscribes to a session or chat channel and starts keeping
// its state.
func (c *chatClient) subscribe(uri string) json.RawMessage {
	c.t.Helper()
	var res struct {
		Snapshot struct {
			State json.RawMessage `json:"state"`
		} `json:"snapshot"`
	}
	hook := func(raw json.RawMessage) { // the reader, holding c.mu
		var r struct {
			Snapshot struct {
				State json.RawMessage `json:"state"`
			} `json:"snapshot"`
		}
		if json.Unmarshal(raw, &r) != nil {
			return
		}
		if strings.HasPrefix(uri, "ahp-chat:") {
			var s ahp.ChatState
			if json.Unmarshal(r.Snapshot.State, &s) == nil {
				c.chats[uri] = s
			}
		} else {
			var s ahp.SessionState
			if json.Unmarshal(r.Snapshot.State, &s) == nil {
				c.sessions[uri] = s
			}
		}
	}
	if err := c.callHook("subscribe", map[string]any{"channel": uri}, &res, hook); err != nil {
		c.t.Fatalf("subscribe %s: %v", uri, err)
	}
	return res.Snapshot.State
}

var clientSeq struct {
	sync.Mutex
	n int64
}

func (c *chatClient) dispatch(channel string, a ahp.Action) {
	c.t.Helper()
	clientSeq.Lock()
	clientSeq.n++
	n := clientSeq.n
	clientSeq.Unlock()
	msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": "dispatchAction",
		"params": map[string]any{"channel": channel, "clientSeq": n, "action": a}})
	if err := c.conn.Send(c.ctx, msg); err != nil {
		c.t.Fatal(err)
	}
}

// say begins a turn in the chat.
func (c *chatClient) say(chat, turnID, text string) {
	c.dispatch(chat, ahp.TurnStarted(turnID, time.Now(), ahp.UserMessage(text)))
}

// waitChat waits until cond holds of the chat's state as the client
// reduced it.
func (c *chatClient) waitChat(chat, what string, cond func(ahp.ChatState) bool) ahp.ChatState {
	c.t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		c.mu.Lock()
		s := c.chats[chat]
		c.mu.Unlock()
		if cond(s) {
			return s
		}
		select {
		case <-c.changed:
		case <-deadline:
			c.t.Fatalf("timed out waiting for %s: %s", what, jsonText(s))
		}
	}
}

// turn waits for the chat's turn turnID to end and returns it.
func (c *chatClient) turn(chat, turnID string) ahp.Turn {
	c.t.Helper()
	s := c.waitChat(chat, "turn "+turnID+" to end", func(s ahp.ChatState) bool {
		for _, t := range s.Turns {
			if t.ID == turnID {
				return true
			}
		}
		return false
	})
	for _, t := range s.Turns {
		if t.ID == turnID {
			return t
		}
	}
	return ahp.Turn{}
}

// sameAsSnapshot checks that every state the client reduced equals a
// fresh snapshot of it, once the client has heard every action (polling
// with a deadline, as actions may still be on their way). A chat's
// snapshot holds its latest turns: the fresh client fetches the older ones
// with fetchTurns, as the snapshot's turnsNextCursor offers them.
func (c *chatClient) sameAsSnapshot(e *chatEnv, token string) {
	c.t.Helper()
	fresh := e.connect(c.t, token)
	c.mu.Lock()
	var uris []string
	for u := range c.sessions {
		uris = append(uris, u)
	}
	for u := range c.chats {
		uris = append(uris, u)
	}
	c.mu.Unlock()
	deadline := time.Now().Add(5 * time.Second)
	for _, u := range uris {
		for {
			snap := fresh.subscribe(u)
			if strings.HasPrefix(u, "ahp-chat:") {
				snap = fresh.fetchAllTurns(u)
			}
			c.mu.Lock()
			var mine any = c.sessions[u]
			if strings.HasPrefix(u, "ahp-chat:") {
				mine = c.chats[u]
			}
			got := normal(jsonText(mine))
			c.mu.Unlock()
			var want any
			json.Unmarshal(snap, &want)
			w := jsonText(want)
			if w == got {
				break
			}
			if time.Now().After(deadline) {
				c.t.Errorf("%s: reduced state\n%s\nsnapshot\n%s", u, got, w)
				break
			}
			select {
			case <-c.changed:
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
}

// fetchAllTurns fetches the chat's older turns until its turnsNextCursor
// is empty and returns the chat's state then.
func (c *chatClient) fetchAllTurns(chat string) json.RawMessage {
	c.t.Helper()
	for range 1000 {
		c.mu.Lock()
		cursor := c.chats[chat].TurnsNextCursor
		c.mu.Unlock()
		if cursor == "" {
			break
		}
		// chat/turnsLoaded comes before the answer.
		c.mustCall("fetchTurns", map[string]any{"channel": chat, "cursor": cursor}, nil)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return json.RawMessage(jsonText(c.chats[chat]))
}

func normal(s string) string {
	var v any
	json.Unmarshal([]byte(s), &v)
	return jsonText(v)
}

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

func markdown(t ahp.Turn) []string { return t.Replies() }

func turnError(t ahp.Turn) *ahp.ErrorInfo { return t.Failure() }
