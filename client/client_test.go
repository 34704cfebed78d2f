package client_test

import (
	"context"
	"errors"
	"github.com/agenthost/bots/client"
	"log/slog"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/bots"
	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/bot"
	"github.com/agenthost/bots/errcode"
	"github.com/agenthost/bots/internal/waittest"
	"github.com/agenthost/bots/transport"
)

const testToken = "client-test-root-token"

// transport's in-memory pipe is a Conn: a client runs on it as on a
// WebSocket.
var _ client.Conn = (*transport.Conn)(nil)

// startServer serves a bots server in process on a loopback httptest
// server, with a users file whose root token is testToken, and returns
// its URL. Cleanup stops it.
func startServer(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	users := filepath.Join(dir, "users.json")
	if err := os.WriteFile(users, []byte(`{"root":{"token":"`+testToken+`"},"users":[]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := &bots.Server{ConfigDir: filepath.Join(dir, "config"), HostName: "test", Options: bot.Options{Root: filepath.Join(dir, "bots")}, UsersFile: users}
	if err := srv.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	web := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { web.Close(); srv.Close() })
	return web.URL
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// breakable is a WebSocket the test can break, as a network would.
type breakable struct {
	client.Conn
	mu     sync.Mutex
	broken bool
}

func (b *breakable) cut() {
	b.mu.Lock()
	b.broken = true
	b.mu.Unlock()
	b.Conn.Close()
}

// redialer dials url for a client, holding each redial until the test
// lets it through; conns are the connections it made, the first one
// included.
type redialer struct {
	url   string
	let   chan struct{}
	mu    sync.Mutex
	conns []*breakable
}

func (r *redialer) dial(ctx context.Context) (client.Conn, error) {
	c, err := client.DialWS(ctx, r.url, testToken)
	if err != nil {
		return nil, err
	}
	b := &breakable{Conn: c}
	r.mu.Lock()
	r.conns = append(r.conns, b)
	r.mu.Unlock()
	return b, nil
}

func (r *redialer) redial(ctx context.Context) (client.Conn, error) {
	select {
	case <-r.let:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return r.dial(ctx)
}

func (r *redialer) current() *breakable {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.conns[len(r.conns)-1]
}

// resumable returns a client whose connections the test may cut, and
// its redialer, whose let channel lets each redial through.
func resumable(t *testing.T, url string, log *waittest.Log) (*client.Client, *redialer) {
	t.Helper()
	r := &redialer{url: url, let: make(chan struct{})}
	conn, err := r.dial(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	c := client.New(conn, client.Options{Redial: r.redial, Logger: slog.New(slog.NewTextHandler(log, nil))})
	t.Cleanup(func() { c.Close() })
	return c, r
}

func TestAWatchHearsTheChangesMadeWhileItsConnectionWasDownReplayed(t *testing.T) {
	t.Parallel()
	url := startServer(t)
	ctx := testCtx(t)
	var log waittest.Log
	c, r := resumable(t, url, &log)
	w, err := c.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	other, err := client.Dial(ctx, url, testToken)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()

	r.current().cut()
	if _, err := other.Make(ctx, "made-meanwhile", client.Fields{Name: "Meanwhile", Body: "cloud", Color: "red"}); err != nil {
		t.Fatal(err)
	}
	close(r.let)
	e, err := w.Next(ctx)
	if err != nil || e.Kind != client.BotAdded || e.ID != "made-meanwhile" || e.Bot.Name != "Meanwhile" {
		t.Fatalf("the watch heard %+v, %v; want made-meanwhile added", e, err)
	}
	if !strings.Contains(log.String(), "result=replay") {
		t.Errorf("the client did not resume with a replay; its log:\n%s", log.String())
	}
	// the resumed connection carries calls and the watch's later changes.
	if err := c.Delete(ctx, "made-meanwhile"); err != nil {
		t.Fatal(err)
	}
	if e, err := w.Next(ctx); err != nil || e.Kind != client.BotRemoved || e.ID != "made-meanwhile" {
		t.Fatalf("the watch heard %+v, %v; want made-meanwhile removed", e, err)
	}
}

func TestATurnEndsForItsSenderWhenItEndedWhileTheConnectionWasDown(t *testing.T) {
	t.Parallel()
	url := startServer(t)
	ctx := testCtx(t)
	var log waittest.Log
	c, r := resumable(t, url, &log)
	if _, err := c.Make(ctx, "motion", client.Fields{Name: "Motion", Body: "robot", Color: "teal"}); err != nil {
		t.Fatal(err)
	}
	chat, err := c.OpenChat(ctx, "motion")
	if err != nil {
		t.Fatal(err)
	}
	turn, err := chat.Send(ctx, "sleep 600")
	if err != nil {
		t.Fatal(err)
	}
	id, _ := turn.ID(ctx)
	r.current().cut()

	// another client stops the turn while the sender is away.
	other, err := client.Dial(ctx, url, testToken)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	seen, err := other.JoinChat(ctx, chat.Session())
	if err != nil {
		t.Fatal(err)
	}
	if err := seen.Stop(ctx, id); err != nil {
		t.Fatal(err)
	}
	close(r.let)
	ended, err := turn.Wait(ctx)
	if err != nil || ended.ID != id || ended.State != ahp.TurnStateCancelled {
		t.Fatalf("the turn ended %+v, %v; want %s cancelled", ended, err, id)
	}
	if got := chat.State(); got.ActiveTurn != nil || len(got.Turns) != 1 {
		t.Errorf("the sender's chat holds %d turns and active %v, want the one ended", len(got.Turns), got.ActiveTurn)
	}
}

func TestSendWhileATurnRunsQueuesTheMessageAndItsTurnFollows(t *testing.T) {
	t.Parallel()
	url := startServer(t)
	ctx := testCtx(t)
	c, err := client.Dial(ctx, url, testToken)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Make(ctx, "motion", client.Fields{Name: "Motion", Body: "robot", Color: "teal"}); err != nil {
		t.Fatal(err)
	}
	chat, err := c.OpenChat(ctx, "motion")
	if err != nil {
		t.Fatal(err)
	}
	first, err := chat.Send(ctx, "sleep 600")
	if err != nil {
		t.Fatal(err)
	}
	second, err := chat.Send(ctx, "hello")
	if err != nil {
		t.Fatal(err)
	}
	if st := chat.State(); len(st.QueuedMessages) != 1 || st.QueuedMessages[0].Message.Text != "hello" {
		t.Fatalf("the chat's queue is %+v, want hello", st.QueuedMessages)
	}
	id, _ := first.ID(ctx)
	if err := chat.Stop(ctx, id); err != nil {
		t.Fatal(err)
	}
	ended, err := second.Wait(ctx)
	if err != nil || ended.State != ahp.TurnStateComplete || strings.Join(client.Replies(ended), "|") != "Motion heard: hello" {
		t.Fatalf("the queued message's turn ended %+v, %v", ended, err)
	}
	if got, _ := second.ID(ctx); got == id || got == "" {
		t.Errorf("the queued turn's id is %q (the first's is %q)", got, id)
	}
}

func TestErrorsCarryTheCodeTheServiceGave(t *testing.T) {
	t.Parallel()
	url := startServer(t)
	ctx := testCtx(t)
	c, err := client.Dial(ctx, url, testToken)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = c.Read(ctx, "nobody")
	var rpc *client.RPCError
	if errcode.Of(err) != errcode.NotFound || !errors.As(err, &rpc) || rpc.Code != transport.CodeNotFound {
		t.Errorf("reading a bot that is not there answered %v (code %v)", err, errcode.Of(err))
	}
	if !strings.Contains(err.Error(), "bot://nobody") {
		t.Errorf("the error %q does not name the bot", err)
	}
	_, err = c.Make(ctx, "Bad Slug", client.Fields{Name: "x"})
	if errcode.Of(err) != errcode.Invalid {
		t.Errorf("a bad slug answered %v (code %v)", err, errcode.Of(err))
	}
	if _, err := client.Dial(ctx, url, "wrong-token"); errcode.Of(err) != errcode.Unauthenticated || !strings.Contains(err.Error(), "refused the token") {
		t.Errorf("a wrong token answered %v (code %v)", err, errcode.Of(err))
	}
	if _, err := client.Dial(ctx, url, ""); errcode.Of(err) != errcode.Unauthenticated || !strings.Contains(err.Error(), "none was given") {
		t.Errorf("no token answered %v (code %v), want it said that none was given", err, errcode.Of(err))
	}
	if _, err := c.JoinChat(ctx, "ahp-session:/nope"); errcode.Of(err) != errcode.NotFound || !strings.Contains(err.Error(), "no chat of session ahp-session:/nope") {
		t.Errorf("joining a chat that is not there answered %v (code %v), want not found naming the session", err, errcode.Of(err))
	}
}

// TestADialTheServerRefusesSaysItsReasonAndIsNoReasonToTryAgain: a Host
// the server does not answer (here 0.0.0.0, which reaches it on this
// machine) is refused with 421 and a sentence; the client gives that
// sentence, as permission denied, not a bare status as unavailable.
func TestADialTheServerRefusesSaysItsReasonAndIsNoReasonToTryAgain(t *testing.T) {
	t.Parallel()
	url := strings.Replace(startServer(t), "127.0.0.1", "0.0.0.0", 1)
	_, err := client.Dial(testCtx(t), url, testToken)
	if errcode.Of(err) != errcode.PermissionDenied || !strings.Contains(err.Error(), "does not answer the Host") || !strings.Contains(err.Error(), "PublicHosts") {
		t.Errorf("dialling a Host the server does not answer: %v (code %v), want permission denied with the server's sentence", err, errcode.Of(err))
	}
}

func TestCodeIsTheInverseOfTheServersNumbers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		number  int
		message string
		want    errcode.Code
	}{
		{transport.CodeInvalidParams, "x", errcode.Invalid},
		{transport.CodeInvalidRequest, "x", errcode.Invalid},
		{transport.CodeParseError, "x", errcode.Invalid},
		{transport.CodeMethodNotFound, "x", errcode.Unsupported},
		{transport.CodeUnsupportedProtocol, "x", errcode.Unsupported},
		{transport.CodeSessionNotFound, "x", errcode.NotFound},
		{transport.CodeNotFound, "x", errcode.NotFound},
		{transport.CodePermissionDenied, "x", errcode.PermissionDenied},
		{transport.CodeSessionAlreadyExists, "x", errcode.AlreadyExists},
		{transport.CodeAlreadyExists, "x", errcode.AlreadyExists},
		{transport.CodeConflict, "x", errcode.Conflict},
		{transport.CodeAuthRequired, "x", errcode.Unauthenticated},
		{transport.CodeInternalError, "internal error", errcode.Internal},
		{transport.CodeInternalError, "the server is shutting down", errcode.Unavailable},
		{-1, "x", errcode.Internal},
	} {
		if got := client.Code(tc.number, tc.message); got != tc.want {
			t.Errorf("Code(%d, %q) = %v, want %v", tc.number, tc.message, got, tc.want)
		}
	}
}

// TestWaitSaysWhyATurnEndedInError: a turn that ends in error (here, no
// agent serves the bot's provider) is returned with a *TurnError holding
// the server's reason, not as a turn with no replies and no error.
func TestWaitSaysWhyATurnEndedInError(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	turn, err := openMotion(t, client.Fields{Name: "Motion", Provider: "claude"}).Send(ctx, "hello")
	if err != nil {
		t.Fatal(err)
	}
	ended, err := turn.Wait(ctx)
	var te *client.TurnError
	if !errors.As(err, &te) || ended.State != ahp.TurnStateError || te.TurnID != ended.ID {
		t.Fatalf("Wait returned %+v, %v; want the turn ended in error with a *client.TurnError", ended, err)
	}
	if want := `no agent for provider "claude"`; !strings.Contains(err.Error(), want) || te.Info.Message != ended.Failure().Message {
		t.Errorf("the error says %q (info %+v), want the server's reason, %s", err, te.Info, want)
	}
}

// TestAClientWhoseRedialIsRefusedEndsSayingWhy: dialling again after a
// drop that the server refuses (a Host it does not answer) ends the
// client with the server's reason: calls return it rather than waiting on
// a redial that can never succeed.
func TestAClientWhoseRedialIsRefusedEndsSayingWhy(t *testing.T) {
	t.Parallel()
	url := startServer(t)
	ctx := testCtx(t)
	first, err := client.DialWS(ctx, url, testToken)
	if err != nil {
		t.Fatal(err)
	}
	conn := &breakable{Conn: first}
	elsewhere := strings.Replace(url, "127.0.0.1", "0.0.0.0", 1)
	c := client.New(conn, client.Options{Redial: func(ctx context.Context) (client.Conn, error) {
		return client.DialWS(ctx, elsewhere, testToken)
	}})
	defer c.Close()
	if _, err := c.List(ctx); err != nil { // the client has said hello on the first connection
		t.Fatal(err)
	}
	conn.cut()
	// A call on the connection as it drops fails as dropped; once the
	// redial was refused, every call says why.
	waittest.For(t, "a call to say the server refused the redial", func() bool {
		_, err = c.List(ctx)
		return errcode.Of(err) == errcode.PermissionDenied
	})
	if !strings.Contains(err.Error(), "does not answer the Host") {
		t.Errorf("a call after a refused redial: %v, want the server's sentence", err)
	}
}

// TestWaitAfterTheEventsWereReadReturnsTheTurnAsItEnded: a caller that
// ranged over a turn's events to its end still gets the ended turn from
// Wait, not an error.
func TestWaitAfterTheEventsWereReadReturnsTheTurnAsItEnded(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	turn, err := openMotion(t, client.Fields{Name: "Motion"}).Send(ctx, "hello")
	if err != nil {
		t.Fatal(err)
	}
	for _, err := range turn.Events(ctx) {
		if err != nil {
			t.Fatal(err)
		}
	}
	ended, err := turn.Wait(ctx)
	if err != nil || ended.State != ahp.TurnStateComplete || strings.Join(client.Replies(ended), "|") != "Motion heard: hello" {
		t.Errorf("Wait after the events were read: %+v, %v; want the turn as it ended", ended, err)
	}
}

// TestClosingAClientWhoseServerWentIsNoError: the server closed every
// connection as it stopped; the client's Close has nothing left to close
// and says no error.
func TestClosingAClientWhoseServerWentIsNoError(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	users := filepath.Join(dir, "users.json")
	if err := os.WriteFile(users, []byte(`{"root":{"token":"`+testToken+`"},"users":[]}`), 0o600); err != nil {
		t.Fatal(err)
	}
	srv := &bots.Server{ConfigDir: filepath.Join(dir, "config"), HostName: "test", Options: bot.Options{Root: filepath.Join(dir, "bots")}, UsersFile: users}
	web := httptest.NewServer(srv.Handler())
	defer web.Close()
	ctx := testCtx(t)
	c, err := client.Dial(ctx, web.URL, testToken)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.List(ctx); err != nil {
		t.Fatal(err)
	}
	srv.Close()
	if err := c.Close(); err != nil {
		t.Errorf("Close after the server went: %v, want nil", err)
	}
}

// openMotion starts a server, makes the bot motion there with f and
// opens a chat with it, on a client closed when the test ends.
func openMotion(t *testing.T, f client.Fields) *client.Chat {
	t.Helper()
	ctx := testCtx(t)
	c, err := client.Dial(ctx, startServer(t), testToken)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := c.Make(ctx, "motion", f); err != nil {
		t.Fatal(err)
	}
	chat, err := c.OpenChat(ctx, "motion")
	if err != nil {
		t.Fatal(err)
	}
	return chat
}
