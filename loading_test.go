package bots_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"

	"github.com/agenthost/bots"
	"github.com/agenthost/bots/access"
	"github.com/agenthost/bots/bot"
	"github.com/agenthost/bots/internal/waittest"
	"github.com/agenthost/bots/record"
	"github.com/agenthost/bots/record/memrecord"
)

// heldStore is a memory store whose first Watch - the first thing a bot
// service's start asks of its store - waits until release is called (or
// answers failWith then), so that a test holds a Server in its load.
type heldStore struct {
	*memrecord.Store
	held     chan struct{}
	once     sync.Once
	waiting  chan struct{} // closed once a Watch waits for the release
	waitOnce sync.Once
	failWith error
	problems []record.Problem
}

func (h *heldStore) Watch(ctx context.Context) (<-chan record.Change, error) {
	h.waitOnce.Do(func() { close(h.waiting) })
	select {
	case <-h.held:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if h.failWith != nil {
		return nil, h.failWith
	}
	return h.Store.Watch(ctx)
}

// Problems are the store's problems, as filerecord reports a bot.md it
// refused at load.
func (h *heldStore) Problems() []record.Problem { return h.problems }

func (h *heldStore) release() { h.once.Do(func() { close(h.held) }) }

// heldServer is a Server over n bots (bot-1 … bot-n) whose load waits
// for the store's release, served over a test HTTP server, with Start
// running; started reports Start's answer.
type heldServer struct {
	srv     *bots.Server
	store   *heldStore
	url     string // the AHP WebSocket
	http    string // the HTTP server's base URL
	started chan error
}

func startHeld(t *testing.T, n int) *heldServer {
	t.Helper()
	ctx := t.Context()
	mem := memrecord.New()
	seed := newServer(t)
	seed.Store = mem
	if err := seed.Start(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if _, err := seed.Service().Make(ctx, access.RootPrincipal(), fmt.Sprintf("bot-%d", i+1), []byte(`{"name":"Seed"}`)); err != nil {
			t.Fatal(err)
		}
	}
	seed.Close()
	h := &heldServer{store: &heldStore{Store: mem, held: make(chan struct{}), waiting: make(chan struct{})}, started: make(chan error, 1)}
	h.srv = &bots.Server{ConfigDir: seed.ConfigDir, HostName: seed.HostName, Options: seed.Options, Store: h.store}
	web := httptest.NewServer(h.srv.Handler())
	// The seed made the local token in the config folder they share.
	h.http, h.url = web.URL, wsURL(web)+"?tkn="+seed.LocalToken()
	go func() { h.started <- h.srv.Start(context.Background()) }()
	t.Cleanup(func() {
		h.store.release()
		web.Close()
		h.srv.Close()
	})
	return h
}

// rpcConn is one AHP connection for a test: calls by id, answers by id.
type rpcConn struct {
	t  *testing.T
	ws *websocket.Conn
	id int
}

func dialAHP(t *testing.T, url string) *rpcConn {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	ws.SetReadLimit(-1)
	t.Cleanup(func() { ws.CloseNow() })
	return &rpcConn{t: t, ws: ws}
}

// send sends a request and returns its id.
func (c *rpcConn) send(method string, params any) int {
	c.t.Helper()
	c.id++
	if err := wsjson.Write(c.t.Context(), c.ws, map[string]any{"jsonrpc": "2.0", "id": c.id, "method": method, "params": params}); err != nil {
		c.t.Fatal(err)
	}
	return c.id
}

// rpcError is a JSON-RPC error answer.
type rpcError struct {
	Code    int
	Message string
}

// answer reads until the answer to id, which it returns (result or error).
func (c *rpcConn) answer(id int) (json.RawMessage, *rpcError) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(c.t.Context(), 20*time.Second)
	defer cancel()
	for {
		var m struct {
			ID     *int
			Result json.RawMessage
			Error  *rpcError
		}
		if err := wsjson.Read(ctx, c.ws, &m); err != nil {
			c.t.Fatalf("reading the answer to request %d: %v", id, err)
		}
		if m.ID != nil && *m.ID == id {
			return m.Result, m.Error
		}
	}
}

// call sends a request and returns its result, failing on an error.
func (c *rpcConn) call(method string, params any) json.RawMessage {
	c.t.Helper()
	res, e := c.answer(c.send(method, params))
	if e != nil {
		c.t.Fatalf("%s: %d %s", method, e.Code, e.Message)
	}
	return res
}

func (c *rpcConn) initialize() map[string]any {
	c.t.Helper()
	var res struct {
		Meta map[string]any `json:"_meta"`
	}
	if err := json.Unmarshal(c.call("initialize", map[string]any{"protocolVersions": []string{"1.0.0"}, "clientId": "t"}), &res); err != nil {
		c.t.Fatal(err)
	}
	return res.Meta
}

// stillLoading fails the test when the server's Start has returned.
func (h *heldServer) stillLoading(t *testing.T) {
	t.Helper()
	select {
	case err := <-h.started:
		t.Fatalf("Start returned (%v) while the store was held", err)
	default:
	}
}

// loaded releases the store and waits for Start, which must succeed.
func (h *heldServer) loaded(t *testing.T) {
	t.Helper()
	h.store.release()
	if err := <-h.started; err != nil {
		t.Fatal(err)
	}
}

func TestAnInitializeIsAnsweredWhileTheBotsLoadAndSaysSo(t *testing.T) {
	t.Parallel()
	h := startHeld(t, 3)
	meta := dialAHP(t, h.url).initialize()
	h.stillLoading(t)
	if meta[bot.LoadingMeta] != true {
		t.Errorf("_meta[%q] = %v while loading, want true", bot.LoadingMeta, meta[bot.LoadingMeta])
	}
	if _, ok := meta[bot.ProblemsMeta]; ok {
		t.Errorf("an initialize while loading lists problems: %v", meta[bot.ProblemsMeta])
	}
	providers, _ := meta["ahpd.resourceProviders"].(map[string]any)
	if _, ok := providers[bot.Scheme]; !ok || meta["ahpd.principal"] != "root:test" || meta["ahpd.channels"] == nil {
		t.Errorf("an initialize while loading lacks what it always holds: %v", meta)
	}
	h.loaded(t)
	after := dialAHP(t, h.url).initialize()
	if _, ok := after[bot.LoadingMeta]; ok {
		t.Errorf("an initialize once loaded says %q", bot.LoadingMeta)
	}
	delete(meta, bot.LoadingMeta)
	a, _ := json.Marshal(meta)
	b, _ := json.Marshal(after)
	if string(a) != string(b) {
		t.Errorf("the initialize while loading holds\n%s\nbut once loaded\n%s", a, b)
	}
}

func TestARequestThatNeedsTheBotsSentWhileTheyLoadGetsTheFullAnswerOnceLoaded(t *testing.T) {
	t.Parallel()
	const n = 50
	want := []string{}
	for i := range n {
		want = append(want, fmt.Sprintf("bot-%d", i+1))
	}
	for _, tc := range []struct {
		name, method string
		params       any
		check        func(t *testing.T, res json.RawMessage)
	}{
		{"listing", "resourceList", map[string]any{"uri": "bot://"}, func(t *testing.T, res json.RawMessage) {
			var got struct{ Entries []struct{ Name string } }
			json.Unmarshal(res, &got)
			var names []string
			for _, e := range got.Entries {
				if strings.HasPrefix(e.Name, "bot-") {
					names = append(names, e.Name)
				}
			}
			slices.Sort(names)
			w := slices.Clone(want)
			slices.Sort(w)
			if !slices.Equal(names, w) {
				t.Errorf("the listing holds %d of the %d bots: %s", len(names), n, res)
			}
		}},
		{"read", "resourceRead", map[string]any{"uri": "bot://bot-" + fmt.Sprint(n)}, func(t *testing.T, res json.RawMessage) {
			if !strings.Contains(string(res), `\"name\":\"Seed\"`) {
				t.Errorf("the read answered %s", res)
			}
		}},
		{"catalogue", "subscribe", map[string]any{"channel": "x-ahpd-bots://"}, func(t *testing.T, res json.RawMessage) {
			var got struct {
				Snapshot struct {
					State struct{ Bots []struct{ ID string } }
				}
			}
			json.Unmarshal(res, &got)
			if len(got.Snapshot.State.Bots) < n {
				t.Errorf("the catalogue's snapshot holds %d bots, want %d and the bundled: %s", len(got.Snapshot.State.Bots), n, res)
			}
		}},
		{"problems", "subscribe", map[string]any{"channel": bot.ProblemsURI}, func(t *testing.T, res json.RawMessage) {
			if !strings.Contains(string(res), "bot-1.md is not a bot") {
				t.Errorf("the problems' snapshot lacks the store's problem: %s", res)
			}
		}},
		{"chat", "createSession", map[string]any{"channel": "ahp-session:/early", "provider": bot.ChatProvider, "config": map[string]any{"bot": "bot-1"}}, func(t *testing.T, res json.RawMessage) {
			if string(res) != "null" {
				t.Errorf("createSession answered %s", res)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := startHeld(t, n)
			h.store.problems = []record.Problem{{ID: "bot-1", Path: "/somewhere/bot-1.md", Reason: "bot-1.md is not a bot", Since: time.Now()}}
			c := dialAHP(t, h.url)
			c.initialize()
			id := c.send(tc.method, tc.params)
			// Another connection is answered meanwhile: the request waits
			// for the load, not the server.
			if meta := dialAHP(t, h.url).initialize(); meta[bot.LoadingMeta] != true {
				t.Fatalf("a second initialize: %v", meta)
			}
			h.stillLoading(t)
			h.loaded(t)
			res, e := c.answer(id)
			if e != nil {
				t.Fatalf("%s sent while loading: %d %s", tc.method, e.Code, e.Message)
			}
			tc.check(t, res)
		})
	}
}

func TestHealthzIsNotReadyUntilTheBotsAreLoaded(t *testing.T) {
	t.Parallel()
	h := startHeld(t, 1)
	dialAHP(t, h.url).initialize() // the wire serves
	resp, err := http.Get(h.http + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("GET /healthz while loading answered %s, want 503", resp.Status)
	}
	h.stillLoading(t)
	h.loaded(t)
	resp, err = http.Get(h.http + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("GET /healthz once loaded answered %s, want 200", resp.Status)
	}
}

func TestALoadThatFailsAnswersTheWaitingRequestsWithAnErrorNeverAResult(t *testing.T) {
	t.Parallel()
	h := startHeld(t, 1)
	h.store.failWith = errors.New("the disk is gone")
	c := dialAHP(t, h.url)
	c.initialize()
	id := c.send("resourceList", map[string]any{"uri": "bot://"})
	h.store.release()
	if err := <-h.started; err == nil || !strings.Contains(err.Error(), "the disk is gone") {
		t.Errorf("Start answered %v, want the store's error", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	for { // an error answer, or the connection closed with the server
		var m struct {
			ID     *int
			Result json.RawMessage
		}
		if err := wsjson.Read(ctx, c.ws, &m); err != nil {
			if ctx.Err() != nil {
				t.Fatal("no answer and no close after the load failed")
			}
			break
		}
		if m.ID != nil && *m.ID == id {
			if m.Result != nil {
				t.Fatalf("a request sent before a failed load got a result: %s", m.Result)
			}
			break
		}
	}
	resp, err := http.Get(h.http + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Errorf("GET /healthz after a failed load answered %s, want 503", resp.Status)
	}
}

func TestCloseWhileTheBotsLoadWaitsForTheLoadAndStartAnswersClosed(t *testing.T) {
	t.Parallel()
	h := startHeld(t, 1)
	dialAHP(t, h.url).initialize()
	// The load is held at the store once it waits there; a Close before
	// would end it sooner, at its first look at its context.
	<-h.store.waiting
	closed := make(chan error, 1)
	go func() { closed <- h.srv.Close() }()
	// Close has begun once the server says it is not running, rather
	// than loading; the load goes on until the store is released.
	var code int
	var body string
	if !waittest.Within(10*time.Second, func() bool {
		code, body = get(t, h.srv.Handler(), "/healthz")
		return code == http.StatusServiceUnavailable && strings.Contains(body, "not running")
	}) {
		t.Fatalf("GET /healthz answers %d %q after Close", code, body)
	}
	// Start may not have begun yet (its goroutine can come after Close,
	// and then answers ErrClosed at once), so what is held to waiting is
	// Close.
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while the store was held", err)
	default:
	}
	h.store.release()
	if err := <-closed; err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := <-h.started; !errors.Is(err, bots.ErrClosed) {
		t.Errorf("Start answered %v after a Close during the load, want ErrClosed", err)
	}
	if h.srv.Service() != nil {
		t.Error("a Server closed during its load has a service")
	}
}
