package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// The tokens of the users file the tests serve.
const (
	rootToken = "root-token-0123456789"
	softToken = "soft-token-0123456789" // soft: bot:put and session:create, member of backend
	kimToken  = "kim-token-0123456789"  // kim: bot:get
	nemoToken = "nemo-token-0123456789" // nemo: no grants, no memberships
	hostName  = "e2e"
)

// usersJSON is the users file: root, and soft, kim and nemo as the tokens
// above say. backend names whoever is a member of the backend team.
func usersJSON(backend ...string) string {
	type user struct {
		ID          string   `json:"id"`
		Token       string   `json:"token"`
		Grants      []string `json:"grants"`
		Memberships []string `json:"memberships"`
	}
	member := func(id string) []string {
		if slices.Contains(backend, id) {
			return []string{"backend"}
		}
		return []string{}
	}
	f := map[string]any{
		"root": map[string]string{"token": rootToken},
		"users": []user{
			{ID: "soft", Token: softToken, Grants: []string{"bot:put", "session:create"}, Memberships: member("soft")},
			{ID: "kim", Token: kimToken, Grants: []string{"bot:get"}, Memberships: member("kim")},
			{ID: "nemo", Token: nemoToken, Grants: []string{}, Memberships: member("nemo")},
		},
	}
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		panic(err)
	}
	return string(data)
}

// dirs are the folders a server runs on; users is "" for no users file.
type dirs struct{ config, root, users string }

// newDirs makes the folders in a temp folder, with the users file holding
// usersJSON("soft").
func newDirs(tb testing.TB) dirs {
	tb.Helper()
	base := tb.TempDir()
	d := dirs{config: filepath.Join(base, "config"), root: filepath.Join(base, "bots"), users: filepath.Join(base, "users.json")}
	writeAtomic(tb, d.users, usersJSON("soft"))
	return d
}

func (d dirs) args(extra ...string) []string {
	args := []string{"-addr", "127.0.0.1:0", "-config", d.config, "-root", d.root, "-host-name", hostName, "-log-level", "warn"}
	if d.users != "" {
		args = append(args, "-users", d.users)
	}
	return append(args, extra...)
}

// writeAtomic writes a file by renaming a temp file over it, so that a
// reader polling it never sees half of it.
func writeAtomic(tb testing.TB, path, content string) {
	tb.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o600); err != nil {
		tb.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		tb.Fatal(err)
	}
}

// testCtx is a test's context, with the timeout every test has.
func testCtx(tb testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	tb.Cleanup(cancel)
	return ctx
}

// localTokens are the local tokens of the servers the tests started with
// no users file, by the address they listen on (or a proxy's in front of
// one), as their listening lines printed them: the dial helpers present
// the token of the address they dial when the test gives none.
var localTokens sync.Map

// listening reads a server's listening line: "listening on
// http://<addr>", or with no users file "listening on
// http://<addr>/?tkn=<token>", and remembers the token of addr.
func listening(line string) (addr, token string, err error) {
	rest, ok := strings.CutPrefix(line, "listening on http://")
	if !ok {
		return "", "", fmt.Errorf("the server printed %q, want listening on http://<addr>", line)
	}
	addr, token, found := strings.Cut(rest, "/?tkn=")
	if found && (len(token) < 32 || strings.ContainsAny(token, "/?&# ")) {
		return "", "", fmt.Errorf("the server printed %q, whose token is not one", line)
	}
	if found {
		localTokens.Store(addr, token)
	} else {
		localTokens.Delete(addr)
	}
	return addr, token, nil
}

// mustListening is listening for a test.
func mustListening(tb testing.TB, line string) string {
	tb.Helper()
	addr, _, err := listening(line)
	if err != nil {
		tb.Fatal(err)
	}
	return addr
}

// withLocalToken is url, an AHP WebSocket URL of the server (or proxy)
// at addr, with the local token that server printed, when it printed one
// and url presents no token.
func withLocalToken(url, addr string) string {
	tok, ok := localTokens.Load(addr)
	if !ok || strings.Contains(url, "tkn=") {
		return url
	}
	if !strings.Contains(strings.TrimPrefix(url, "ws://"+addr), "/") {
		url += "/"
	}
	return url + "?tkn=" + tok.(string)
}

// presetLocalToken gives the config folder config a local token before
// its server first starts, for tests that connect before the listening
// line, and returns it (the one there when there is one).
func presetLocalToken(tb testing.TB, config string) string {
	tb.Helper()
	path := filepath.Join(config, "local-token")
	if data, err := os.ReadFile(path); err == nil {
		return strings.TrimSpace(string(data))
	}
	tok := fmt.Sprintf("preset-local-token-%020d", time.Now().UnixNano())
	if err := os.MkdirAll(config, 0o700); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(tok+"\n"), 0o600); err != nil {
		tb.Fatal(err)
	}
	return tok
}

// testServer is run serving in a goroutine.
type testServer struct {
	addr    string // host:port
	token   string // the local token it printed; "" with a users file
	cancel  context.CancelFunc
	done    chan error
	stopped bool
}

// startServer runs the server with args and waits for its listening line.
// Cleanup stops it and checks that run returned nil.
func startServer(tb testing.TB, args []string) *testServer {
	tb.Helper()
	s, err := tryStart(args)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.stop(tb) })
	return s
}

// tryStart runs the server with args and returns once it listens, or the
// error run returned.
func tryStart(args []string) (*testServer, error) {
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	s := &testServer{cancel: cancel, done: make(chan error, 1)}
	go func() {
		err := run(ctx, args, pw)
		pw.Close()
		s.done <- err
	}()
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		if sc.Scan() {
			line <- sc.Text()
		}
		io.Copy(io.Discard, pr)
	}()
	timeout := time.NewTimer(20 * time.Second)
	defer timeout.Stop()
	select {
	case l := <-line:
		addr, token, err := listening(l)
		if err != nil {
			cancel()
			return nil, err
		}
		s.addr, s.token = addr, token
		return s, nil
	case err := <-s.done:
		cancel()
		s.stopped = true
		if err == nil {
			err = errors.New("run returned nil before it listened")
		}
		return nil, err
	case <-timeout.C:
		cancel()
		return nil, errors.New("the server printed no listening line in 20s")
	}
}

// stop cancels run's context and checks it returns nil. It is idempotent.
func (s *testServer) stop(tb testing.TB) {
	tb.Helper()
	if s.stopped {
		return
	}
	s.stopped = true
	s.cancel()
	t := time.NewTimer(20 * time.Second)
	defer t.Stop()
	select {
	case err := <-s.done:
		if err != nil {
			tb.Errorf("run returned %v, want nil", err)
		}
	case <-t.C:
		tb.Errorf("run did not return within 20s of its context's end")
	}
}

func (s *testServer) wsURL() string { return "ws://" + s.addr + "/" }

// page is the address the server printed: its page, with its local token
// when it has one.
func (s *testServer) page() string {
	if s.token == "" {
		return "http://" + s.addr + "/"
	}
	return "http://" + s.addr + "/?tkn=" + s.token
}

// message is a JSON-RPC message from the server.
type message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *rpcError       `json:"error"`
	raw    []byte
}

type rpcError struct {
	Code    int             `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

// envelope is the params of an action notification.
type envelope struct {
	Channel         string          `json:"channel"`
	Action          json.RawMessage `json:"action"`
	ServerSeq       int64           `json:"serverSeq"`
	Origin          json.RawMessage `json:"origin"`
	RejectionReason string          `json:"rejectionReason"`
}

// client is one WebSocket connection to the server. A goroutine reads it:
// responses go to their callers by id, notifications are kept in order.
type client struct {
	ctx    context.Context // the test's: bounds every call
	ws     *websocket.Conn
	nextID atomic.Int64

	mu      sync.Mutex
	waits   map[string]chan *message
	notes   []*message
	taken   int // notifications already returned
	labels  map[string]string
	more    chan struct{} // signalled when a notification arrives
	ended   chan struct{}
	readErr error
}

// tokenBy says how a client presents its token.
type tokenBy int

const (
	byQuery tokenBy = iota
	byBearer
)

// dial connects with token (the server's local token when empty: none
// with a users file) and closes at cleanup.
func dial(ctx context.Context, tb testing.TB, s *testServer, token string, by tokenBy) *client {
	tb.Helper()
	c, resp, err := dialErr(ctx, s, token, by)
	if err != nil {
		tb.Fatalf("dial: %v (response %v)", err, resp)
	}
	tb.Cleanup(c.close)
	return c
}

func dialErr(ctx context.Context, s *testServer, token string, by tokenBy) (*client, *http.Response, error) {
	u := s.wsURL()
	opts := &websocket.DialOptions{}
	if token == "" {
		token = s.token
	}
	switch {
	case token == "":
	case by == byQuery:
		u += "?tkn=" + token
	default:
		opts.HTTPHeader = http.Header{"Authorization": {"Bearer " + token}}
	}
	ws, resp, err := websocket.Dial(ctx, u, opts)
	if err != nil {
		return nil, resp, err
	}
	ws.SetReadLimit(64 << 20)
	c := &client{
		ctx:    ctx,
		ws:     ws,
		waits:  map[string]chan *message{},
		labels: map[string]string{},
		more:   make(chan struct{}, 1),
		ended:  make(chan struct{}),
	}
	go c.readLoop()
	return c, resp, nil
}

func (c *client) readLoop() {
	defer close(c.ended)
	for {
		_, data, err := c.ws.Read(context.Background())
		if err != nil {
			c.mu.Lock()
			c.readErr = err
			c.mu.Unlock()
			return
		}
		m := &message{raw: data}
		if err := json.Unmarshal(data, m); err != nil {
			c.mu.Lock()
			c.readErr = fmt.Errorf("the server sent %s: %w", data, err)
			c.mu.Unlock()
			return
		}
		c.mu.Lock()
		if m.Method == "" {
			if ch := c.waits[string(m.ID)]; ch != nil {
				delete(c.waits, string(m.ID))
				ch <- m
			}
		} else {
			c.notes = append(c.notes, m)
			select {
			case c.more <- struct{}{}:
			default:
			}
		}
		c.mu.Unlock()
	}
}

// close closes the socket and waits for the reader to end.
func (c *client) close() {
	c.ws.Close(websocket.StatusNormalClosure, "")
	<-c.ended
}

// send sends a request and returns its response.
func (c *client) send(t testing.TB, method string, params any) *message {
	t.Helper()
	id := strconv.FormatInt(c.nextID.Add(1), 10)
	frame, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(id), "method": method, "params": params})
	if err != nil {
		t.Fatal(err)
	}
	ch := make(chan *message, 1)
	c.mu.Lock()
	c.waits[id] = ch
	c.mu.Unlock()
	if err := c.ws.Write(c.ctx, websocket.MessageText, frame); err != nil {
		t.Fatalf("%s: write: %v", method, err)
	}
	select {
	case m := <-ch:
		return m
	case <-c.ended:
		c.mu.Lock()
		err := c.readErr
		c.mu.Unlock()
		t.Fatalf("%s %s: the connection ended: %v", method, frame, err)
	case <-c.ctx.Done():
		t.Fatalf("%s %s: no answer: %v", method, frame, c.ctx.Err())
	}
	return nil
}

// notify sends a notification.
func (c *client) notify(t testing.TB, method string, params any) {
	t.Helper()
	frame, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "method": method, "params": params})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.ws.Write(c.ctx, websocket.MessageText, frame); err != nil {
		t.Fatalf("%s: write: %v", method, err)
	}
}

// result sends a request that must succeed and decodes its result into
// out (when not nil).
func (c *client) result(t testing.TB, method string, params any, out any) json.RawMessage {
	t.Helper()
	m := c.send(t, method, params)
	if m.Error != nil {
		t.Fatalf("%s %v answered %s", method, params, m.raw)
	}
	if out != nil {
		if err := json.Unmarshal(m.Result, out); err != nil {
			t.Fatalf("%s: result %s: %v", method, m.Result, err)
		}
	}
	return m.Result
}

// fail sends a request that must fail with code, and whose message holds
// every one of names.
func (c *client) fail(t testing.TB, method string, params any, code int, names ...string) *rpcError {
	t.Helper()
	m := c.send(t, method, params)
	if m.Error == nil || m.Error.Code != code {
		t.Fatalf("%s %v answered %s, want code %d", method, params, m.raw, code)
	}
	for _, n := range names {
		if !strings.Contains(m.Error.Message, n) {
			t.Errorf("%s: message %q does not name %q", method, m.Error.Message, n)
		}
	}
	return m.Error
}

// initResult is the part of initialize's result the tests read.
type initResult struct {
	ProtocolVersion string         `json:"protocolVersion"`
	ServerSeq       int64          `json:"serverSeq"`
	Snapshots       []snapshot     `json:"snapshots"`
	Meta            map[string]any `json:"_meta"`
	ServerInfo      map[string]any `json:"serverInfo"`
}

type snapshot struct {
	Resource string          `json:"resource"`
	State    json.RawMessage `json:"state"`
	FromSeq  int64           `json:"fromSeq"`
}

func (c *client) initialize(t testing.TB, clientID string) initResult {
	t.Helper()
	var r initResult
	c.result(t, "initialize", map[string]any{"channel": "ahp-root://", "protocolVersions": []string{"1.0.0"}, "clientId": clientID}, &r)
	if r.ProtocolVersion != "1.0.0" {
		t.Fatalf("initialize chose %q, want 1.0.0", r.ProtocolVersion)
	}
	return r
}

// subscribe subscribes to a channel and returns its snapshot; the
// channel's actions are summarised under label.
func (c *client) subscribe(t testing.TB, channel, label string) snapshot {
	t.Helper()
	var r struct {
		Snapshot *snapshot `json:"snapshot"`
	}
	c.result(t, "subscribe", map[string]any{"channel": channel}, &r)
	if r.Snapshot == nil {
		t.Fatalf("subscribe %s: no snapshot", channel)
	}
	c.mu.Lock()
	c.labels[channel] = label
	c.mu.Unlock()
	return *r.Snapshot
}

// subscribeCatalogue subscribes to x-ahpd-bots:// and returns the slugs
// of its snapshot, fence left out.
func (c *client) subscribeCatalogue(t testing.TB) []string {
	t.Helper()
	snap := c.subscribe(t, "x-ahpd-bots://", "bots")
	var st struct {
		Bots []struct {
			ID string `json:"id"`
		} `json:"bots"`
	}
	if err := json.Unmarshal(snap.State, &st); err != nil {
		t.Fatalf("catalogue snapshot %s: %v", snap.State, err)
	}
	ids := []string{}
	for _, b := range st.Bots {
		if b.ID != fenceSlug {
			ids = append(ids, b.ID)
		}
	}
	return ids
}

// watch makes a resource watch on uri and subscribes to it; its actions
// are summarised under uri.
func (c *client) watch(t testing.TB, uri string) string {
	t.Helper()
	var w struct {
		Channel string `json:"channel"`
	}
	c.result(t, "createResourceWatch", res(uri), &w)
	if !strings.HasPrefix(w.Channel, "ahp-resource-watch:/") {
		t.Fatalf("createResourceWatch %s gave channel %q", uri, w.Channel)
	}
	snap := c.subscribe(t, w.Channel, uri)
	var st struct {
		Root string `json:"root"`
	}
	if err := json.Unmarshal(snap.State, &st); err != nil || st.Root != uri {
		t.Fatalf("watch snapshot %s, want root %s", snap.State, uri)
	}
	return w.Channel
}

// next returns the next notification not yet returned, waiting for it.
func (c *client) next(t testing.TB) *message {
	t.Helper()
	for {
		c.mu.Lock()
		if c.taken < len(c.notes) {
			m := c.notes[c.taken]
			c.taken++
			c.mu.Unlock()
			return m
		}
		c.mu.Unlock()
		select {
		case <-c.more:
		case <-c.ended:
			t.Fatalf("the connection ended while waiting for a notification")
		case <-c.ctx.Done():
			t.Fatalf("no notification: %v", c.ctx.Err())
		}
	}
}

// waitFor returns the summaries of the next notifications up to and
// including the first whose summary is want.
func (c *client) waitFor(t testing.TB, want string) []string {
	t.Helper()
	var got []string
	for {
		s := c.summary(t, c.next(t))
		got = append(got, s)
		if s == want {
			return got
		}
	}
}

// events pings the server, so that everything sent before is in, and
// returns the summaries of the notifications not yet returned, leaving
// out those about the fence bot.
func (c *client) events(t testing.TB) []string {
	t.Helper()
	c.result(t, "ping", map[string]any{"channel": "ahp-root://"}, nil)
	c.mu.Lock()
	notes := c.notes[c.taken:]
	c.taken = len(c.notes)
	c.mu.Unlock()
	out := []string{}
	for _, m := range notes {
		if s := c.summary(t, m); !strings.Contains(s, fenceSlug) {
			out = append(out, s)
		}
	}
	return out
}

// summary is a notification in a line: "<label>: added motion" for the
// catalogue, "<label>: updated bot://motion" for a watch.
func (c *client) summary(t testing.TB, m *message) string {
	t.Helper()
	if m.Method != "action" {
		return m.Method + " " + string(m.Params)
	}
	var env envelope
	if err := json.Unmarshal(m.Params, &env); err != nil {
		t.Fatalf("action %s: %v", m.raw, err)
	}
	c.mu.Lock()
	label := c.labels[env.Channel]
	c.mu.Unlock()
	if label == "" {
		label = env.Channel
	}
	var a struct {
		Type string `json:"type"`
		ID   string `json:"id"`
		Bot  struct {
			ID string `json:"id"`
		} `json:"bot"`
		Changes struct {
			Items []struct {
				URI  string `json:"uri"`
				Type string `json:"type"`
			} `json:"items"`
		} `json:"changes"`
	}
	if err := json.Unmarshal(env.Action, &a); err != nil {
		t.Fatalf("action %s: %v", m.raw, err)
	}
	var what string
	switch a.Type {
	case "x-ahpd-bots/added", "x-ahpd-bots/changed":
		what = strings.TrimPrefix(a.Type, "x-ahpd-bots/") + " " + a.Bot.ID
	case "x-ahpd-bots/removed":
		what = "removed " + a.ID
	case "resourceWatch/changed":
		var parts []string
		for _, it := range a.Changes.Items {
			parts = append(parts, it.Type+" "+it.URI)
		}
		what = strings.Join(parts, ", ")
	default:
		what = string(env.Action)
	}
	if env.RejectionReason != "" {
		what = "rejected " + what + ": " + env.RejectionReason
	}
	return label + ": " + what
}

// res is the params of a resource method on uri, with more key/value
// pairs.
func res(uri string, kv ...any) map[string]any {
	p := map[string]any{"channel": "ahp-root://", "uri": uri}
	for i := 0; i+1 < len(kv); i += 2 {
		p[kv[i].(string)] = kv[i+1]
	}
	return p
}

// makeBot makes bot://slug from body (createOnly).
func (c *client) makeBot(t testing.TB, slug, body string) {
	t.Helper()
	c.result(t, "resourceWrite", res("bot://"+slug, "data", body, "encoding", "utf-8", "createOnly", true), nil)
}

// editBot edits bot://slug with body, with ifMatch when not empty.
func (c *client) editBot(t testing.TB, slug, body, ifMatch string) {
	t.Helper()
	p := res("bot://"+slug, "data", body, "encoding", "utf-8")
	if ifMatch != "" {
		p["ifMatch"] = ifMatch
	}
	c.result(t, "resourceWrite", p, nil)
}

func (c *client) deleteBot(t testing.TB, slug string) {
	t.Helper()
	c.result(t, "resourceDelete", res("bot://"+slug), nil)
}

// readBot reads bot://slug as a record.
func (c *client) readBot(t testing.TB, slug string) map[string]any {
	t.Helper()
	var r struct {
		Data        string `json:"data"`
		Encoding    string `json:"encoding"`
		ContentType string `json:"contentType"`
	}
	c.result(t, "resourceRead", res("bot://"+slug), &r)
	if r.Encoding != "utf-8" || r.ContentType != "application/json" {
		t.Fatalf("read %s: encoding %q, content type %q", slug, r.Encoding, r.ContentType)
	}
	var b map[string]any
	if err := json.Unmarshal([]byte(r.Data), &b); err != nil {
		t.Fatalf("read %s: %s: %v", slug, r.Data, err)
	}
	return b
}

// etag resolves bot://slug and returns its etag.
func (c *client) etag(t testing.TB, slug string) string {
	t.Helper()
	var r struct {
		URI  string `json:"uri"`
		Type string `json:"type"`
		Etag string `json:"etag"`
	}
	c.result(t, "resourceResolve", res("bot://"+slug), &r)
	if r.URI != "bot://"+slug || r.Type != "file" || r.Etag == "" {
		t.Fatalf("resolve %s: %+v", slug, r)
	}
	return r.Etag
}

// list returns the slugs resourceList bot:// answers, fence left out.
func (c *client) list(t testing.TB) []string {
	t.Helper()
	var r struct {
		Entries []struct {
			Name string `json:"name"`
			Type string `json:"type"`
		} `json:"entries"`
	}
	c.result(t, "resourceList", res("bot://"), &r)
	out := []string{}
	for _, e := range r.Entries {
		if e.Type != "file" {
			t.Errorf("list entry %s is a %s, want file", e.Name, e.Type)
		}
		if e.Name != fenceSlug {
			out = append(out, e.Name)
		}
	}
	return out
}

// fenceSlug is the bot a group edits to know that every change before it
// has reached every subscriber.
const fenceSlug = "fence"

// group is one server for a group of tests, with a root client subscribed
// to the catalogue that hears every change.
type group struct {
	ctx    context.Context
	srv    *testServer
	dirs   dirs
	root   *client
	fences int
}

// newGroup starts a server on fresh folders, makes the fence bot and
// subscribes a root client to the catalogue.
func newGroup(ctx context.Context, t *testing.T) *group {
	t.Helper()
	d := newDirs(t)
	g := &group{ctx: ctx, srv: startServer(t, d.args()), dirs: d}
	g.root = g.connect(t, rootToken, "fence-root")
	g.root.makeBot(t, fenceSlug, `{"name":"Fence","body":"square"}`)
	g.root.subscribe(t, "x-ahpd-bots://", "bots")
	g.settle(t)
	return g
}

// connect dials with token and initializes as clientID.
func (g *group) connect(t *testing.T, token, clientID string) *client {
	t.Helper()
	c := dial(g.ctx, t, g.srv, token, byQuery)
	c.initialize(t, clientID)
	return c
}

// settle returns once every change made before it has reached every
// subscriber: the catalogue applies changes one at a time, in order, and
// publishes all of one change (catalogue and watches) before the next, so
// once the root client hears the fence edit, all before it was sent.
func (g *group) settle(t testing.TB) {
	t.Helper()
	g.fences++
	g.root.editBot(t, fenceSlug, fmt.Sprintf(`{"description":"fence %d"}`, g.fences), "")
	g.root.waitFor(t, "bots: changed "+fenceSlug)
}
