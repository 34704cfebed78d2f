package transport

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/agenthost/bots/internal/waittest"
)

// wsServer serves a fakeHost over a real WebSocket.
func wsServer(t *testing.T, cfg Config) (*Server, *httptest.Server) {
	t.Helper()
	srv, _ := newTestServer(t, cfg)
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return srv, hs
}

func wsURL(hs *httptest.Server, token string) string {
	u := "ws" + strings.TrimPrefix(hs.URL, "http")
	if token != "" {
		u += "/?tkn=" + token
	}
	return u
}

func dialWS(t *testing.T, hs *httptest.Server, token string) *websocket.Conn {
	t.Helper()
	c, resp, err := websocket.Dial(testContext(t), wsURL(hs, token), nil)
	if err != nil {
		t.Fatalf("dial: %v (response %v)", err, resp)
	}
	c.SetReadLimit(-1)
	t.Cleanup(func() { c.CloseNow() })
	return c
}

func wsSend(t *testing.T, c *websocket.Conn, frame string) {
	t.Helper()
	if err := c.Write(testContext(t), websocket.MessageText, []byte(frame)); err != nil {
		t.Fatalf("write: %v", err)
	}
}

func wsRecv(t *testing.T, c *websocket.Conn) rpcMessage {
	t.Helper()
	typ, data, err := c.Read(testContext(t))
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	if typ != websocket.MessageText {
		t.Fatalf("the server sent a binary frame")
	}
	var m rpcMessage
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("read %s: %v", data, err)
	}
	m.raw = data
	return m
}

// wsCall sends a frame and returns the next message, which must carry
// wantCode (0: a result).
func wsCall(t *testing.T, c *websocket.Conn, frame string, wantCode int) rpcMessage {
	t.Helper()
	wsSend(t, c, frame)
	m := wsRecv(t, c)
	switch {
	case wantCode == 0 && m.Error != nil:
		t.Fatalf("%s answered %s", frame, m.raw)
	case wantCode != 0 && (m.Error == nil || m.Error.Code != wantCode):
		t.Fatalf("%s answered %s, want code %d", frame, m.raw, wantCode)
	}
	return m
}

const (
	wsPing = `{"jsonrpc":"2.0","id":"p","method":"ping","params":{"channel":"ahp-root://"}}`
	wsInit = `{"jsonrpc":"2.0","id":"i","method":"initialize","params":{"protocolVersions":["1.0.0"],"clientId":"ws"}}`
)

// waitClosed reads until the connection ends and returns its close status.
func waitClosed(t *testing.T, c *websocket.Conn) websocket.StatusCode {
	t.Helper()
	for {
		_, _, err := c.Read(testContext(t))
		if err != nil {
			return websocket.CloseStatus(err)
		}
	}
}

func TestWebSocketRefusesWrongOrMissingToken(t *testing.T) {
	t.Parallel()
	_, hs := wsServer(t, Config{})
	for _, token := range []string{"", "wrong"} {
		_, resp, err := websocket.Dial(testContext(t), wsURL(hs, token), nil)
		if err == nil || resp == nil || resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("token %q: dial err %v, response %v; want 401", token, err, resp)
		}
	}
}

func TestWebSocketAcceptsTokenInQueryOrBearerHeader(t *testing.T) {
	t.Parallel()
	_, hs := wsServer(t, Config{})
	c := dialWS(t, hs, "soft-token")
	m := wsCall(t, c, wsInit, 0)
	if !strings.Contains(string(m.Result), `"ahpd.principal":"user:soft"`) {
		t.Fatalf("initialize %s, want user:soft", m.raw)
	}
	h := http.Header{"Authorization": {"Bearer root-token"}}
	c2, _, err := websocket.Dial(testContext(t), wsURL(hs, ""), &websocket.DialOptions{HTTPHeader: h})
	if err != nil {
		t.Fatalf("dial with a Bearer header: %v", err)
	}
	defer c2.CloseNow()
	m = wsCall(t, c2, wsInit, 0)
	if !strings.Contains(string(m.Result), `"ahpd.principal":"root"`) {
		t.Fatalf("initialize %s, want root", m.raw)
	}
}

func TestWebSocketInvalidJSONIsAnsweredAndServingGoesOn(t *testing.T) {
	t.Parallel()
	_, hs := wsServer(t, Config{})
	c := dialWS(t, hs, "root-token")
	wsCall(t, c, `{"jsonrpc":"2.0","id":1,"method":`, CodeParseError)
	wsCall(t, c, "\x00not json", CodeParseError)
	wsCall(t, c, wsPing, 0)
}

func TestWebSocketNotJSONRPCIsInvalidRequest(t *testing.T) {
	t.Parallel()
	_, hs := wsServer(t, Config{})
	c := dialWS(t, hs, "root-token")
	for _, frame := range []string{`42`, `{"id":1,"method":"ping"}`, `{"jsonrpc":"1.0","id":1,"method":"ping"}`, `[]`, `{"jsonrpc":"2.0","id":1,"method":7}`} {
		wsCall(t, c, frame, CodeInvalidRequest)
	}
	wsCall(t, c, wsPing, 0)
}

func TestWebSocketRequestBeforeInitializeIsRefused(t *testing.T) {
	t.Parallel()
	_, hs := wsServer(t, Config{})
	c := dialWS(t, hs, "root-token")
	wsCall(t, c, wsPing, 0)
	wsCall(t, c, `{"jsonrpc":"2.0","id":1,"method":"subscribe","params":{"channel":"ahp-root://"}}`, CodeInvalidRequest)
	wsCall(t, c, `{"jsonrpc":"2.0","id":2,"method":"listSessions","params":{"channel":"ahp-root://"}}`, CodeInvalidRequest)
	wsCall(t, c, wsInit, 0)
	wsCall(t, c, wsPing, 0)
}

func TestWebSocketWrongParamTypesAreInvalidParams(t *testing.T) {
	t.Parallel()
	_, hs := wsServer(t, Config{})
	c := dialWS(t, hs, "root-token")
	wsCall(t, c, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersions":[1],"clientId":"x"}}`, CodeInvalidParams)
	wsCall(t, c, `{"jsonrpc":"2.0","id":2,"method":"initialize","params":"1.0.0"}`, CodeInvalidParams)
	wsCall(t, c, wsInit, 0)
	wsCall(t, c, `{"jsonrpc":"2.0","id":3,"method":"subscribe","params":{"channel":1}}`, CodeInvalidParams)
	wsCall(t, c, `{"jsonrpc":"2.0","id":4,"method":"resourceRead","params":{"uri":{"scheme":"mem"}}}`, CodeInvalidParams)
	wsCall(t, c, `{"jsonrpc":"2.0","id":5,"method":"dispatchAction","params":{"channel":"test:/notes","clientSeq":1.5,"action":{}}}`, CodeInvalidParams)
	wsCall(t, c, wsPing, 0)
}

func TestWebSocketBinaryFrameClosesWithUnsupportedData(t *testing.T) {
	t.Parallel()
	_, hs := wsServer(t, Config{})
	c := dialWS(t, hs, "root-token")
	if err := c.Write(testContext(t), websocket.MessageBinary, []byte(wsPing)); err != nil {
		t.Fatal(err)
	}
	if got := waitClosed(t, c); got != websocket.StatusUnsupportedData {
		t.Fatalf("closed with %v, want 1003", got)
	}
}

func TestWebSocketFrameOverLimitClosesThatConnectionOnly(t *testing.T) {
	t.Parallel()
	_, hs := wsServer(t, Config{ReadLimit: 1 << 10})
	other := dialWS(t, hs, "root-token")
	c := dialWS(t, hs, "root-token")
	big := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("x", 2<<10) + `"}}`
	if err := c.Write(testContext(t), websocket.MessageText, []byte(big)); err != nil {
		t.Fatal(err)
	}
	if got := waitClosed(t, c); got != websocket.StatusMessageTooBig {
		t.Fatalf("closed with %v, want 1009", got)
	}
	wsCall(t, other, wsPing, 0)
}

// TestWebSocketSlowReaderDoesNotHoldUpOthers sends 10,000 requests without
// reading: each is answered in order until, perhaps, the server closes the
// connection, and meanwhile another connection is served.
func TestWebSocketSlowReaderDoesNotHoldUpOthers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, method string
		sendQueue    int
		mustClose    bool
	}{
		{"pings", `"ping","params":{"channel":"ahp-root://"}`, 0, false},
		{"large answers", `"resourceRead","params":{"uri":"mem://big"}`, 16, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs waittest.Log
			_, hs := wsServer(t, Config{SendQueue: tc.sendQueue, Logger: logs.Logger(slog.LevelDebug)})
			slow := dialWS(t, hs, "root-token")
			wsCall(t, slow, wsInit, 0)
			const n = 10000
			sent := make(chan int, 1)
			go func() {
				i := 0
				for ; i < n; i++ {
					frame := `{"jsonrpc":"2.0","id":` + itoa(i) + `,"method":` + tc.method + `}`
					if slow.Write(context.Background(), websocket.MessageText, []byte(frame)) != nil {
						break
					}
				}
				sent <- i
			}()
			other := dialWS(t, hs, "root-token")
			wsCall(t, other, wsInit, 0)
			for range 20 {
				wsCall(t, other, wsPing, 0)
			}
			if tc.mustClose {
				waittest.For(t, "the slow reader to be closed", func() bool { return strings.Contains(logs.String(), "too far behind") })
				wsCall(t, other, wsPing, 0)
			}
			<-sent
			next := 0
			// reading 10,000 answers under -race on a busy machine is slow
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
			defer cancel()
			for {
				_, data, err := slow.Read(ctx)
				if ctx.Err() != nil {
					t.Fatalf("reading the answers took too long: %d of %d read", next, n)
				}
				if err != nil {
					break
				}
				var m rpcMessage
				if err := json.Unmarshal(data, &m); err != nil {
					t.Fatalf("answer %d: %v", next, err)
				}
				if string(m.ID) != itoa(next) {
					t.Fatalf("answer with id %s, want %d", m.ID, next)
				}
				next++
				if next == n {
					break
				}
			}
			if tc.mustClose && next == n {
				t.Fatal("the slow reader got every large answer; it was never closed")
			}
			if next < n && !strings.Contains(logs.String(), "too far behind") {
				t.Fatalf("the slow reader got %d of %d answers and no log says why", next, n)
			}
		})
	}
}

func itoa(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

func TestShutdownClosesWebSockets(t *testing.T) {
	t.Parallel()
	srv, hs := wsServer(t, Config{})
	c := dialWS(t, hs, "root-token")
	wsCall(t, c, wsInit, 0)
	status := make(chan websocket.StatusCode, 1)
	go func() {
		_, _, err := c.Read(context.Background())
		status <- websocket.CloseStatus(err)
	}()
	if err := srv.Shutdown(testContext(t)); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if got := <-status; got != websocket.StatusGoingAway {
		t.Fatalf("closed with %v, want 1001", got)
	}
	if _, resp, err := websocket.Dial(testContext(t), wsURL(hs, "root-token"), nil); err == nil {
		t.Fatalf("dial after Shutdown succeeded (%v)", resp)
	}
}

func TestWebSocketRefusesAnUpgradeFromAnotherOriginBeforeLookingAtItsToken(t *testing.T) {
	t.Parallel()
	_, hs := wsServer(t, Config{})
	own := hs.URL // http://127.0.0.1:PORT: the page this server serves
	port := own[strings.LastIndex(own, ":"):]
	for _, origin := range []string{"http://evil.example" + port, "http://localhost" + port, "http://127.0.0.1:1", "null", "file://" + strings.TrimPrefix(own, "http://"), "https://127.0.0.1" + port + ".evil.example"} {
		for _, token := range []string{"", "root-token"} {
			_, resp, err := websocket.Dial(testContext(t), wsURL(hs, token), &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {origin}}})
			if err == nil || resp == nil || resp.StatusCode != http.StatusForbidden {
				t.Errorf("origin %q, token %q: dial err %v, response %v; want 403", origin, token, err, resp)
				continue
			}
			body, _ := io.ReadAll(resp.Body)
			if !strings.Contains(string(body), "refused a WebSocket from the page at "+strconv.Quote(origin)) {
				t.Errorf("origin %q: the refusal says %q", origin, body)
			}
		}
	}
	for _, origin := range []string{"", own, strings.ToUpper(own[:4]) + own[4:]} {
		h := http.Header{}
		if origin != "" {
			h.Set("Origin", origin)
		}
		c, resp, err := websocket.Dial(testContext(t), wsURL(hs, "root-token"), &websocket.DialOptions{HTTPHeader: h})
		if err != nil {
			t.Errorf("origin %q: dial: %v (response %v)", origin, err, resp)
			continue
		}
		c.CloseNow()
	}
}
