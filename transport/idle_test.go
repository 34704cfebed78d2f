package transport

import (
	"fmt"
	"log/slog"
	"net/http/httptest"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/agenthost/bots/internal/waittest"
)

// TestAnIdleConnectionHoldsOnlyItsReader: a connection that was
// initialized, subscribed and sent an action, then left idle, holds one
// goroutine on the server: the one reading, which the WebSocket library
// needs. No writer waits for messages, and the HTTP handler's goroutine
// has returned. (The client's end holds none: coder/websocket starts no
// goroutine, and the test reads in turn.)
func TestAnIdleConnectionHoldsOnlyItsReader(t *testing.T) {
	srv, host := newTestServer(t, Config{})
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	const n = 20
	base := runtime.NumGoroutine()
	conns := make([]*websocket.Conn, n)
	for i := range conns {
		c := dialWS(t, hs, "root-token")
		wsCall(t, c, fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersions":["1.0.0"],"clientId":"idle-%d"}}`, i), 0)
		wsCall(t, c, `{"jsonrpc":"2.0","id":2,"method":"subscribe","params":{"channel":"test:/notes"}}`, 0)
		conns[i] = c
	}
	if err := host.publish("test:/notes", []byte(`{"type":"notes/add","text":"one"}`)); err != nil {
		t.Fatal(err)
	}
	for _, c := range conns {
		if m := wsRecv(t, c); m.Method != "action" {
			t.Fatalf("got %s, want the action", m.raw)
		}
	}
	waittest.For(t, fmt.Sprintf("%d goroutines for %d idle connections", n, n), func() bool {
		return runtime.NumGoroutine()-base <= n
	})
}

// TestAConnectionsLogLinesNameItsConnectionPrincipalAndRemote: the
// connection's attributes, built only when a line is logged, come first
// on each of its lines, as With would put them.
func TestAConnectionsLogLinesNameItsConnectionPrincipalAndRemote(t *testing.T) {
	t.Parallel()
	var logs waittest.Log
	srv, _ := newTestServer(t, Config{Logger: logs.Logger(slog.LevelDebug)})
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	c := dialWS(t, hs, "soft-token")
	wsCall(t, c, wsInit, 0)
	waittest.For(t, "the connection's first line", func() bool {
		return strings.Contains(logs.String(), "connection open")
	})
	line := logs.String()
	if !regexp.MustCompile(`msg="connection open" conn=\d+ principal=user:soft remote=127\.0\.0\.1:\d+\n`).MatchString(line) {
		t.Errorf("the connection's first line reads %q", line)
	}
}
