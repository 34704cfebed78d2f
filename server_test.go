package bots_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"

	"github.com/agenthost/bots"
	"github.com/agenthost/bots/access"
	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/bot"
	"github.com/agenthost/bots/client"
	"github.com/agenthost/bots/internal/waittest"
	"github.com/agenthost/bots/record"
	"github.com/agenthost/bots/record/memrecord"
)

// newServer is a Server on temp folders, not started.
func newServer(t *testing.T) *bots.Server {
	t.Helper()
	dir := t.TempDir()
	return &bots.Server{ConfigDir: filepath.Join(dir, "config"), HostName: "test", Options: bot.Options{Root: filepath.Join(dir, "bots")}}
}

// get answers a GET of path on h, as a browser on this machine asks
// (Host localhost): its status and body.
func get(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	r := httptest.NewRequest(http.MethodGet, path, nil)
	r.Host = "localhost"
	h.ServeHTTP(rec, r)
	return rec.Code, rec.Body.String()
}

// tokenURL starts srv, served by web, and returns the URL of its AHP
// WebSocket with its local token.
func tokenURL(t *testing.T, srv *bots.Server, web *httptest.Server) string {
	t.Helper()
	if err := srv.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	return wsURL(web) + "?tkn=" + srv.LocalToken()
}

func TestServerStartsOnItsFirstRequestAndThenAnswersHealthz(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	defer srv.Close()
	if srv.Service() != nil {
		t.Fatal("a Server that was never started has a service")
	}
	// The first request starts the server, whose bots load in the
	// background: /healthz answers 503 until they have, then 200.
	h := srv.Handler()
	deadline := time.Now().Add(10 * time.Second)
	for {
		code, body := get(t, h, "/healthz")
		if code == http.StatusOK && body == "ok\n" {
			break
		}
		if code != http.StatusServiceUnavailable || time.Now().After(deadline) {
			t.Fatalf("GET /healthz answered %d %q, want 503 while loading, then 200 ok", code, body)
		}
		time.Sleep(time.Millisecond)
	}
	if srv.Service() == nil {
		t.Error("the first request did not start the server")
	}
	if err := srv.Start(t.Context()); err != nil {
		t.Errorf("a second start: %v", err)
	}
}

func TestServerThatCannotStartAnswers503AndSaysWhyAtStart(t *testing.T) {
	t.Parallel()
	srv := &bots.Server{}
	defer srv.Close()
	if err := srv.Start(t.Context()); err == nil || !strings.Contains(err.Error(), "ConfigDir is required") {
		t.Errorf("start without a config folder: %v", err)
	}
	if code, _ := get(t, srv.Handler(), "/healthz"); code != http.StatusServiceUnavailable {
		t.Errorf("GET /healthz answered %d, want 503", code)
	}
	bad := newServer(t)
	bad.DefaultAgent = "claude"
	if err := bad.Start(t.Context()); err == nil || !strings.Contains(err.Error(), `default agent "claude": no such agent (this server runs echo)`) {
		t.Errorf("start with an unknown default agent: %v", err)
	}
}

func TestServerRefusesALeaseTTLUnderTheMinimumInOneSentence(t *testing.T) {
	t.Parallel()
	for _, ttl := range []time.Duration{-time.Second, 100 * time.Millisecond} {
		s := newServer(t)
		s.LeaseTTL = ttl
		err := s.Start(t.Context())
		s.Close()
		if err == nil || !strings.Contains(err.Error(), "Server.LeaseTTL: a lease time to live of "+ttl.String()+" is refused: it must be at least 500ms") {
			t.Errorf("start with LeaseTTL %v: %v", ttl, err)
		}
	}
	s := newServer(t)
	s.LeaseTTL = time.Second
	defer s.Close()
	if err := s.Start(t.Context()); err != nil {
		t.Errorf("start with LeaseTTL 1s: %v", err)
	}
}

func TestServerAfterCloseRefusesToStartAndAnswers503(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	if err := srv.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	h := srv.Handler()
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(t.Context()); !errors.Is(err, bots.ErrClosed) {
		t.Errorf("start after close: %v, want ErrClosed", err)
	}
	if code, _ := get(t, h, "/healthz"); code != http.StatusServiceUnavailable {
		t.Errorf("GET /healthz after close answered %d, want 503", code)
	}
	if err := srv.Close(); err != nil {
		t.Errorf("a second close: %v", err)
	}
}

func TestServerServesThePageOnGETWithoutAnUpgradeAndTheSocketWithOne(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	srv.Page = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "the page") })
	defer srv.Close()
	if code, body := get(t, srv.Handler(), "/"); code != http.StatusOK || body != "the page" {
		t.Errorf("GET / answered %d %q, want the page", code, body)
	}
	web := httptest.NewServer(srv.Handler())
	defer web.Close()
	initialize(t, tokenURL(t, srv, web))
	srv.Page = nil
	other := newServer(t)
	defer other.Close()
	if code, body := get(t, other.Handler(), "/"); code == http.StatusOK || strings.Contains(body, "the page") {
		t.Errorf("with no page GET / answered %d %q", code, body)
	}
}

// initialize makes one AHP round trip at url and returns the result's _meta.
func initialize(t *testing.T, url string) map[string]any {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	if err := wsjson.Write(ctx, ws, map[string]any{"jsonrpc": "2.0", "id": 1, "method": "initialize",
		"params": map[string]any{"protocolVersions": []string{"1.0.0"}, "clientId": "t"}}); err != nil {
		t.Fatal(err)
	}
	var reply struct {
		Result ahp.InitializeResult
	}
	if err := wsjson.Read(ctx, ws, &reply); err != nil {
		t.Fatal(err)
	}
	return reply.Result.Meta
}

func TestServerClosesTheStoreItOpenedAndLeavesAGivenOneOpen(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	opened := newServer(t)
	if err := opened.Start(ctx); err != nil {
		t.Fatal(err)
	}
	store := opened.Service().Store()
	opened.Close()
	if _, err := store.Get(ctx, "motion"); !errors.Is(err, record.ErrClosed) {
		t.Errorf("the store the server opened answers %v after Close, want ErrClosed", err)
	}
	given := newServer(t)
	given.Store = memrecord.New()
	if err := given.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := given.Service().Make(ctx, access.RootPrincipal(), "motion", []byte(`{"name":"Motion"}`)); err != nil {
		t.Fatal(err)
	}
	given.Close()
	if _, err := given.Store.Get(ctx, "motion"); err != nil {
		t.Errorf("the store given to the server answers %v after Close, want the bot", err)
	}
}

func TestServerUsersFileDecidesWhoConnects(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	srv.UsersFile = filepath.Join(t.TempDir(), "users.json")
	writeFile(t, srv.UsersFile, `{"root": {"token": "root-token-0123456789"}, "users": [{"id": "soft", "token": "soft-token-0123456789"}]}`)
	defer srv.Close()
	web := httptest.NewServer(srv.Handler())
	defer web.Close()
	url := wsURL(web)
	if _, resp, err := websocket.Dial(t.Context(), url+"?tkn=wrong", nil); err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a wrong token: %v, want 401", err)
	}
	if got := initialize(t, url+"?tkn=soft-token-0123456789")["ahpd.principal"]; got != "user:soft" {
		t.Errorf("soft's token connects as %v", got)
	}
}

func TestServerCloseAfterAChatLeavesNoGoroutineOfItsOwn(t *testing.T) {
	before := goroutinesAfterWarmUp(t)
	chatOnceAndClose(t, newServer(t))
	waitGoroutines(t, before)
}

// chatOnceAndClose starts srv, makes the bot motion, says hello to it
// over the AHP WebSocket, checks its answer and closes srv.
func chatOnceAndClose(t *testing.T, srv *bots.Server) {
	t.Helper()
	web := httptest.NewServer(srv.Handler())
	if got := chat(t, tokenURL(t, srv, web), "hello"); got != "Motion heard: hello" {
		t.Errorf("the bot answered %q", got)
	}
	web.Close()
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, path, body string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

// chat makes the bot motion over the AHP WebSocket at url, opens a chat
// with it, says words and returns what the bot posts in the turn.
func chat(t *testing.T, url, words string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	id := 0
	rpc := func(method string, params any) {
		id++
		if err := wsjson.Write(ctx, ws, map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params}); err != nil {
			t.Fatal(err)
		}
	}
	session := "ahp-session:/t"
	rpc("initialize", map[string]any{"protocolVersions": []string{"1.0.0"}, "clientId": "t"})
	rpc("resourceWrite", map[string]any{"uri": "bot://motion", "encoding": "utf-8", "createOnly": true, "data": `{"name":"Motion"}`})
	rpc("createSession", map[string]any{"channel": session, "provider": bot.ChatProvider, "config": map[string]any{"bot": "motion"}})
	rpc("subscribe", map[string]any{"channel": ahp.DefaultChatURI(session)})
	rpc("dispatchAction", map[string]any{"channel": ahp.DefaultChatURI(session), "clientSeq": 1,
		"action": ahp.TurnStarted("t1", time.Now(), ahp.UserMessage(words))})
	var said []string
	for {
		var m struct {
			Error  *struct{ Message string }
			Params struct {
				Action struct {
					Type string
					Part struct{ Kind, Content string }
				}
			}
		}
		if err := wsjson.Read(ctx, ws, &m); err != nil {
			t.Fatal(err)
		}
		switch a := m.Params.Action; {
		case m.Error != nil:
			t.Fatal(m.Error.Message)
		case a.Type == "chat/responsePart" && a.Part.Kind == "markdown":
			said = append(said, a.Part.Content)
		case a.Type == "chat/turnComplete":
			return strings.Join(said, "\n")
		}
	}
}

func TestServerCloseDuringATurnStopsItAndLeavesNoGoroutineOfItsOwn(t *testing.T) {
	before := goroutinesAfterWarmUp(t)
	srv := newServer(t)
	web := httptest.NewServer(srv.Handler())
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, tokenURL(t, srv, web), nil)
	if err != nil {
		t.Fatal(err)
	}
	session := "ahp-session:/sleepy"
	for i, m := range []struct {
		method string
		params any
	}{
		{"initialize", map[string]any{"protocolVersions": []string{"1.0.0"}, "clientId": "t"}},
		{"resourceWrite", map[string]any{"uri": "bot://motion", "encoding": "utf-8", "createOnly": true, "data": `{"name":"Motion"}`}},
		{"createSession", map[string]any{"channel": session, "provider": bot.ChatProvider, "config": map[string]any{"bot": "motion"}}},
		{"subscribe", map[string]any{"channel": ahp.DefaultChatURI(session)}},
		{"dispatchAction", map[string]any{"channel": ahp.DefaultChatURI(session), "clientSeq": 1,
			"action": ahp.TurnStarted("t1", time.Now(), ahp.UserMessage("sleep 60"))}},
	} {
		if err := wsjson.Write(ctx, ws, map[string]any{"jsonrpc": "2.0", "id": i + 1, "method": m.method, "params": m.params}); err != nil {
			t.Fatal(err)
		}
	}
	// Close comes once the turn is accepted: while it wakes the back
	// session or sleeps in it.
	for {
		var m struct{ ID int }
		if err := wsjson.Read(ctx, ws, &m); err != nil {
			t.Fatal(err)
		}
		if m.ID == 5 {
			break
		}
	}
	closed := make(chan error, 1)
	go func() { closed <- srv.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-ctx.Done():
		t.Fatal("Close did not return while a turn slept")
	}
	ws.CloseNow()
	web.Close()
	waitGoroutines(t, before)
}

// goroutinesAfterWarmUp counts the goroutines once a Server has started and
// closed: the file watching library keeps goroutines of its own for the
// process once it is first used, so that only a Server's are counted after.
func goroutinesAfterWarmUp(t *testing.T) int {
	t.Helper()
	warm := newServer(t)
	if err := warm.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	warm.Close()
	return runtime.NumGoroutine()
}

// waitGoroutines polls until no more than before goroutines run, failing
// with every goroutine's stack after ten seconds.
func waitGoroutines(t *testing.T, before int) {
	t.Helper()
	if !waittest.Within(10*time.Second, func() bool { return runtime.NumGoroutine() <= before }) {
		buf := make([]byte, 1<<20)
		t.Fatalf("%d goroutines before, %d after Close:\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
	}
}

func TestListenRefusesAnAddressThatIsNotLoopbackWithoutAUsersDirectory(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	defer srv.Close()
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0"} {
		ln, err := srv.Listen(addr)
		if err == nil {
			ln.Close()
			t.Errorf("Listen(%q) without a users directory listened", addr)
		} else if !strings.Contains(err.Error(), "without a users file") {
			t.Errorf("Listen(%q) answered %q, which does not say a users file is missing", addr, err)
		}
	}
	for _, addr := range []string{"127.0.0.1:0", "localhost:0"} {
		ln, err := srv.Listen(addr)
		if err != nil {
			t.Errorf("Listen(%q) on loopback: %v", addr, err)
			continue
		}
		ln.Close()
	}
}

func TestListenServesAnyAddressWithAUsersFile(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	defer srv.Close()
	srv.UsersFile = filepath.Join(t.TempDir(), "users.json")
	ln, err := srv.Listen("0.0.0.0:0")
	if err != nil {
		t.Fatalf("Listen with a users file: %v", err)
	}
	ln.Close()
}

func TestServeAnswersUntilItsContextEndsThenClosesTheServer(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	ln, err := srv.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	if err := srv.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if meta := initialize(t, "ws://"+ln.Addr().String()+"/?tkn="+srv.LocalToken()); meta == nil {
		t.Fatal("initialize through Serve answered no _meta")
	}
	stop()
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("Serve after its context ended: %v", err)
		}
	case <-time.After(bots.ShutdownGrace + 5*time.Second):
		t.Fatal("Serve did not return after its context ended")
	}
	if err := srv.Start(t.Context()); !errors.Is(err, bots.ErrClosed) {
		t.Errorf("Start after Serve returned answers %v, want ErrClosed", err)
	}
}

func TestServerAnswersOnlyItsHostsButHealthzToAny(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	srv.PublicHosts = []string{"bots.example:9187"}
	srv.Page = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "the page") })
	defer srv.Close()
	if err := srv.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	h := srv.Handler()
	for host, want := range map[string]int{
		"localhost:9187":    http.StatusOK,
		"127.0.0.1":         http.StatusOK,
		"bots.example:9187": http.StatusOK,
		"bots.example:80":   http.StatusMisdirectedRequest,
		"evil.example:9187": http.StatusMisdirectedRequest,
	} {
		for _, path := range []string{"/", "/healthz"} {
			rec := httptest.NewRecorder()
			r := httptest.NewRequest(http.MethodGet, path, nil)
			r.Host = host
			h.ServeHTTP(rec, r)
			if path == "/healthz" && rec.Code != http.StatusOK {
				t.Errorf("Host %s: GET /healthz answered %d, want 200 to any Host", host, rec.Code)
			}
			if path == "/" && rec.Code != want {
				t.Errorf("Host %s: GET / answered %d %q, want %d", host, rec.Code, rec.Body.String(), want)
			}
		}
	}
}

func TestServerRefusesAPublicHostThatIsNotAHostAtStart(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	srv.PublicHosts = []string{"https://bots.example"}
	defer srv.Close()
	if err := srv.Start(t.Context()); err == nil || !strings.Contains(err.Error(), `Server.PublicHosts: "https://bots.example" is not a host name`) {
		t.Errorf("start with a URL for a public host: %v", err)
	}
}

func TestAServerShuttingDownAnswersNothingNewWhileItsSocketsClose(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	srv.Page = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "the page") })
	web := httptest.NewServer(srv.Handler())
	defer web.Close()
	// A client that never reads keeps the graceful close waiting: the
	// window in which a page reconnecting must not be told the server is
	// up while its socket is refused (the page would take that for a
	// refused token).
	ws, _, err := websocket.Dial(t.Context(), tokenURL(t, srv, web), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- srv.Shutdown(ctx) }()
	deadline := time.Now().Add(2 * time.Second)
	for {
		code, body := get(t, srv.Handler(), "/")
		if code == http.StatusServiceUnavailable {
			break
		}
		select {
		case <-done:
			t.Fatalf("Shutdown ended while the page still answered %d %q", code, body)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("while shutting down the page answers %d %q, want 503", code, body)
		}
		time.Sleep(5 * time.Millisecond)
	}
	<-done
}

// TestAServerWhoseStartFailedSaysNothingOfShuttingDown: examples/server
// serves while the bots load; a start that fails (here a users file that
// is not there) ends the serving, and the log then holds the error the
// caller prints, not an INFO "shutting down" of a server that never
// served.
func TestAServerWhoseStartFailedSaysNothingOfShuttingDown(t *testing.T) {
	t.Parallel()
	srv := newServer(t)
	var logs bytes.Buffer
	srv.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	srv.UsersFile = filepath.Join(t.TempDir(), "missing.json")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	serving, stop := context.WithCancel(t.Context())
	served := make(chan error, 1)
	go func() { served <- srv.Serve(serving, ln) }()
	if err := srv.Start(t.Context()); err == nil || !strings.Contains(err.Error(), "missing.json") {
		t.Fatalf("Start answered %v, want the users file's error", err)
	}
	stop()
	<-served
	if strings.Contains(logs.String(), "shutting down") {
		t.Errorf("a server that never served logged:\n%s", logs.String())
	}
}

// TestAStartOverTheOlderLayoutListsTheChatsItMoves: the chat logs of the
// older layout (bot-chats/), which the record store's load moves into the
// bot folders, are listed by the start that moved them: a listing made
// before or beside the load would miss them.
func TestAStartOverTheOlderLayoutListsTheChatsItMoves(t *testing.T) {
	t.Parallel()
	first := newServer(t)
	chatOnceAndClose(t, first)
	logs := filepath.Join(first.ConfigDir, "bots", "motion", "logs")
	if _, err := os.Stat(logs); err != nil {
		t.Fatalf("the chat's log is not where this test moves it from: %v", err)
	}
	if err := os.Mkdir(filepath.Join(first.ConfigDir, "bot-chats"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(logs, filepath.Join(first.ConfigDir, "bot-chats", "motion")); err != nil {
		t.Fatal(err)
	}

	again := &bots.Server{ConfigDir: first.ConfigDir, HostName: "test", Options: first.Options}
	defer again.Close()
	web := httptest.NewServer(again.Handler())
	defer web.Close()
	tokenURL(t, again, web) // starts it
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, wsURL(web), again.LocalToken())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var listed json.RawMessage
	if err := c.Call(ctx, "listSessions", map[string]any{}, &listed); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(listed), `"ahp-session:/t"`) {
		t.Errorf("after the move the chats are %s, want the one moved, ahp-session:/t", listed)
	}
}
