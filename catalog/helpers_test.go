package catalog

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/bots/access"
	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/engine"
	"github.com/agenthost/bots/errcode"
	"github.com/agenthost/bots/internal/waittest"
	"github.com/agenthost/bots/record"
	"github.com/agenthost/bots/transport"
)

// canRead is the bot service's rule: the owner, a member of the owning
// team or project, bot:get, bot:list, *:* or root.
func canRead(p access.Principal, r record.Record) bool {
	return p.Any() || p.Has("bot:get") || p.Has("bot:list") || p.Owns(r.Owner)
}

// The people of the tests, by token (the token is the user id).
func people() map[string]access.Principal {
	return map[string]access.Principal{
		"root":   access.RootPrincipal(),
		"alice":  {User: "alice"},                                 // owns user:alice
		"bob":    {User: "bob", Memberships: []string{"backend"}}, // member of team:backend
		"getter": {User: "getter", Grants: []string{"bot:get"}},
		"lister": {User: "lister", Grants: []string{"bot:list"}},
		"nobody": {User: "nobody"},
	}
}

// bot returns a record owned by owner.
func bot(id, owner string) record.Record {
	t := time.Date(2026, 10, 11, 9, 0, 0, 0, time.UTC)
	return record.Record{ID: id, Name: strings.ToUpper(id[:1]) + id[1:], Owner: owner, Color: "teal", Body: "robot", CreatedAt: t, UpdatedAt: t}
}

// fakeSource is a Source kept in memory; put and del change it and feed
// every watcher.
type fakeSource struct {
	mu     sync.Mutex
	bots   map[string]record.Record
	feeds  map[chan record.Change]bool
	sent   int64
	onBots func() // called at the start of Bots, without mu
}

func newFakeSource(bots ...record.Record) *fakeSource {
	s := &fakeSource{bots: map[string]record.Record{}, feeds: map[chan record.Change]bool{}}
	for _, b := range bots {
		s.bots[b.ID] = b
	}
	return s
}

func (s *fakeSource) Bots(ctx context.Context) ([]record.Record, error) {
	if s.onBots != nil {
		s.onBots()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := slices.Collect(maps.Values(s.bots))
	slices.SortFunc(out, func(a, b record.Record) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

func (s *fakeSource) Watch(ctx context.Context) (<-chan record.Change, error) {
	ch := make(chan record.Change, 1<<14)
	s.mu.Lock()
	s.feeds[ch] = true
	s.mu.Unlock()
	context.AfterFunc(ctx, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.feeds, ch)
		close(ch)
	})
	return ch, nil
}

func (s *fakeSource) sendLocked(c record.Change) {
	for ch := range s.feeds {
		ch <- c
		s.sent++
	}
}

// put makes or edits a bot.
func (s *fakeSource) put(r record.Record) { s.putTagged(r, "") }

// putTagged makes or edits a bot with the etag its change carries.
func (s *fakeSource) putTagged(r record.Record, etag string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	kind := record.Updated
	if _, ok := s.bots[r.ID]; !ok {
		kind = record.Created
	}
	s.bots[r.ID] = r
	s.sendLocked(record.Change{Kind: kind, ID: r.ID, Entry: record.Entry{Record: r, ETag: etag}})
}

// del deletes a bot.
func (s *fakeSource) del(id string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	last := s.bots[id]
	delete(s.bots, id)
	s.sendLocked(record.Change{Kind: record.Deleted, ID: id, Entry: record.Entry{Record: last}})
}

func (s *fakeSource) get(id string) record.Record {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bots[id]
}

func (s *fakeSource) sentCount() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sent
}

// directory is the users file as it is now: a principal by user id.
type directory struct {
	mu sync.Mutex
	by map[string]access.Principal
}

func (d *directory) set(p access.Principal) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.by[p.User] = p
}

func (d *directory) principal(sub *engine.Subscriber) access.Principal {
	d.mu.Lock()
	defer d.mu.Unlock()
	if p, ok := d.by[sub.Principal.User]; ok && !sub.Principal.Root {
		return p
	}
	return sub.Principal
}

// testHost serves the catalogue, the watches and createResourceWatch on
// bot: URIs; a token is a user id of people().
type testHost struct {
	cat    *Catalog
	tokens map[string]access.Principal
}

func (h *testHost) Authenticate(token string) (access.Principal, bool) {
	p, ok := h.tokens[token]
	return p, ok
}

func (h *testHost) Meta(context.Context, engine.Caller) (map[string]any, error) {
	return map[string]any{"ahpd.channels": []any{Info()}}, nil
}

func (h *testHost) Resources(scheme string) engine.ResourceProvider {
	if scheme == "bot" {
		return h
	}
	return nil
}

func (h *testHost) ServeResource(ctx context.Context, call engine.Call) (any, error) {
	if call.Method != ahp.MethodCreateResourceWatch {
		return nil, errcode.New(errcode.Unsupported, "not served")
	}
	var p ahp.CreateResourceWatchParams
	if err := json.Unmarshal(call.Params, &p); err != nil {
		return nil, errcode.New(errcode.Invalid, "bad params")
	}
	ch, err := h.cat.CreateWatch(ctx, call.Principal, p.URI)
	if err != nil {
		return nil, err
	}
	return ahp.CreateResourceWatchResult{Channel: ch}, nil
}

func (h *testHost) Channel(ctx context.Context, c engine.Caller, uri string) (engine.Channel, error) {
	switch {
	case uri == URI:
		return h.cat.Channel(), nil
	case strings.HasPrefix(uri, WatchPrefix):
		if ch, ok := h.cat.WatchChannel(uri); ok {
			return ch, nil
		}
	}
	return nil, errcode.New(errcode.NotFound, "no channel %s", uri)
}

// env is a catalogue over a fakeSource, served by a transport.Server.
type env struct {
	t   testing.TB
	src *fakeSource
	dir *directory
	cat *Catalog
	bus *engine.Bus
	srv *transport.Server
}

// defaultBots: alpha is alice's, beta the backend team's, gamma carol's.
func defaultBots() []record.Record {
	return []record.Record{bot("alpha", "user:alice"), bot("beta", "team:backend"), bot("gamma", "user:carol")}
}

func newEnv(t testing.TB, cfg Config, bots ...record.Record) *env {
	t.Helper()
	e := &env{t: t, src: newFakeSource(bots...), dir: &directory{by: people()}, bus: engine.NewBus(nil)}
	cfg.Source, cfg.Bus, cfg.CanRead, cfg.Principal = e.src, e.bus, canRead, e.dir.principal
	cat, err := New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.Close() })
	e.cat = cat
	srv, err := transport.New(transport.Config{Host: &testHost{cat: cat, tokens: people()}, Bus: e.bus, SendQueue: 1 << 14})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	e.srv = srv
	return e
}

// sync waits until the catalogue has taken every change the source sent:
// their actions are then queued.
func (e *env) sync() {
	e.t.Helper()
	want := e.src.sentCount()
	waittest.For(e.t, "the catalogue to take every change", func() bool {
		e.cat.mu.Lock()
		defer e.cat.mu.Unlock()
		return e.cat.applied >= want
	})
}

// client is one connection through a Pipe.
type client struct {
	t    testing.TB
	ctx  context.Context
	conn *transport.Conn
	n    int
}

func (e *env) dial(token string) *client {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	e.t.Cleanup(cancel)
	conn, err := e.srv.Pipe(ctx, token)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { conn.Close() })
	c := &client{t: e.t, ctx: ctx, conn: conn}
	c.call("initialize", map[string]any{"protocolVersions": []string{"1.0.0"}, "clientId": token + "-client", "initialSubscriptions": []string{}})
	return c
}

// message is any message the server sends.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

func (c *client) send(v any) {
	c.t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		c.t.Fatal(err)
	}
	if err := c.conn.Send(c.ctx, data); err != nil {
		c.t.Fatalf("send: %v", err)
	}
}

func (c *client) recv() message {
	c.t.Helper()
	data, err := c.conn.Recv(c.ctx)
	if err != nil {
		c.t.Fatalf("recv: %v", err)
	}
	var m message
	if err := json.Unmarshal(data, &m); err != nil {
		c.t.Fatalf("recv %s: %v", data, err)
	}
	return m
}

// request sends a request and returns its answer and the messages that came
// before it.
func (c *client) request(method string, params any) (message, []message) {
	c.t.Helper()
	c.n++
	id := fmt.Sprintf("r%d", c.n)
	c.send(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	var before []message
	for {
		m := c.recv()
		if string(m.ID) == `"`+id+`"` {
			return m, before
		}
		before = append(before, m)
	}
}

// call is a request that must succeed and be answered before anything else.
func (c *client) call(method string, params any) json.RawMessage {
	c.t.Helper()
	m, before := c.request(method, params)
	if m.Error != nil {
		c.t.Fatalf("%s: error %d %s", method, m.Error.Code, m.Error.Message)
	}
	if len(before) > 0 {
		c.t.Fatalf("%s: %d messages before the answer", method, len(before))
	}
	return m.Result
}

// callErr is a request that must fail; it returns the error code.
func (c *client) callErr(method string, params any) int {
	c.t.Helper()
	m, _ := c.request(method, params)
	if m.Error == nil {
		c.t.Fatalf("%s answered %s, want an error", method, m.Result)
	}
	return m.Error.Code
}

// snapshot is a subscribe's answer.
type snapshot struct {
	Resource string          `json:"resource"`
	State    json.RawMessage `json:"state"`
	FromSeq  int64           `json:"fromSeq"`
}

func (c *client) subscribe(uri string) snapshot {
	c.t.Helper()
	var res struct {
		Snapshot snapshot `json:"snapshot"`
	}
	if err := json.Unmarshal(c.call("subscribe", map[string]any{"channel": uri}), &res); err != nil {
		c.t.Fatal(err)
	}
	return res.Snapshot
}

// pending returns the action envelopes queued for the client so far.
func (c *client) pending() []engine.Envelope {
	c.t.Helper()
	_, before := c.request("ping", nil)
	out := []engine.Envelope{}
	for _, m := range before {
		if m.Method != "action" {
			c.t.Fatalf("unexpected %s", m.Method)
		}
		var env engine.Envelope
		if err := json.Unmarshal(m.Params, &env); err != nil {
			c.t.Fatal(err)
		}
		out = append(out, env)
	}
	return out
}

// botIDs returns the ids of a catalogue snapshot's bots.
func botIDs(t testing.TB, state json.RawMessage) []string {
	t.Helper()
	var s struct {
		Bots []record.Record `json:"bots"`
	}
	if err := json.Unmarshal(state, &s); err != nil {
		t.Fatal(err)
	}
	if s.Bots == nil {
		t.Fatalf("state %s has no bots array", state)
	}
	ids := []string{}
	for _, b := range s.Bots {
		ids = append(ids, b.ID)
	}
	return ids
}

// describe writes a catalogue action as "added alpha", "changed beta",
// "removed gamma", or a watch change as "added bot://alpha".
func describe(t testing.TB, action json.RawMessage) string {
	t.Helper()
	var a struct {
		Type    string         `json:"type"`
		Bot     *record.Record `json:"bot"`
		ID      string         `json:"id"`
		Changes *struct {
			Items []ahp.ResourceChange `json:"items"`
		} `json:"changes"`
	}
	if err := json.Unmarshal(action, &a); err != nil {
		t.Fatal(err)
	}
	switch a.Type {
	case ActionAdded, ActionChanged:
		return strings.TrimPrefix(a.Type, "x-ahpd-bots/") + " " + a.Bot.ID
	case ActionRemoved:
		return "removed " + a.ID
	case "resourceWatch/changed":
		var parts []string
		for _, c := range a.Changes.Items {
			parts = append(parts, c.Type+" "+c.URI)
		}
		return strings.Join(parts, ", ")
	}
	return string(action)
}

func describeAll(t testing.TB, envs []engine.Envelope) []string {
	t.Helper()
	out := []string{}
	for _, e := range envs {
		out = append(out, describe(t, e.Action))
	}
	return out
}
