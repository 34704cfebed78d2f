// Package slacktest is a fake of the part of Slack's Web API the Slack
// adapter calls (auth.test, chat.postMessage, chat.update: form-encoded
// posts, as documented; apps.connections.open), Slack's side of Socket
// Mode (a WebSocket of envelopes, each acknowledged), and Slack's side of
// the Events API: signed requests.
package slacktest

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// Token, AppToken and Secret are the bot token and the app token the
// fake takes, and the signing secret Sign signs with.
const (
	Token    = "xoxb-fake-slack-token-0123456789"
	AppToken = "xapp-fake-slack-app-token-0123456789"
	Secret   = "fake-signing-secret-0123456789"
)

// Fake is a running fake Web API. Its fields are guarded by Mu.
type Fake struct {
	// API is its address, the api setting of a connection.
	API string
	srv *httptest.Server

	// Mu guards the fields below.
	Mu sync.Mutex
	// Posted and Updated are the forms of each chat.postMessage and
	// chat.update.
	Posted, Updated []url.Values
	// Limited makes the next this many chat.postMessage answer 429
	// (Retry-After: 1).
	Limited int
	// Acked are the envelope ids the Socket Mode client acknowledged, in
	// order.
	Acked []string
	// Opened counts the Socket Mode connections opened.
	Opened int

	sockets  chan *websocket.Conn // each Socket Mode connection, once it said hello
	envelope int
}

// Start starts a fake; the test's end stops it.
func Start(t testing.TB) *Fake {
	f := &Fake{sockets: make(chan *websocket.Conn, 16)}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/socket" {
			f.socket(w, r)
			return
		}
		r.ParseForm()
		if r.URL.Path == "/api/apps.connections.open" {
			w.Header().Set("Content-Type", "application/json")
			if r.Header.Get("Authorization") != "Bearer "+AppToken {
				io.WriteString(w, `{"ok":false,"error":"invalid_auth"}`)
				return
			}
			fmt.Fprintf(w, `{"ok":true,"url":%q}`, "ws"+strings.TrimPrefix(f.srv.URL, "http")+"/socket")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if r.Form.Get("token") != Token && r.Header.Get("Authorization") != "Bearer "+Token {
			io.WriteString(w, `{"ok":false,"error":"invalid_auth"}`)
			return
		}
		f.Mu.Lock()
		defer f.Mu.Unlock()
		switch strings.TrimPrefix(r.URL.Path, "/api/") {
		case "auth.test":
			io.WriteString(w, `{"ok":true,"user_id":"UBOT","bot_id":"BBOT","team":"test"}`)
		case "chat.postMessage":
			if f.Limited > 0 {
				f.Limited--
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(http.StatusTooManyRequests)
				io.WriteString(w, `{"ok":false,"error":"ratelimited"}`)
				return
			}
			f.Posted = append(f.Posted, r.Form)
			fmt.Fprintf(w, `{"ok":true,"channel":%q,"ts":"1700000000.%06d"}`, r.Form.Get("channel"), len(f.Posted))
		case "chat.update":
			f.Updated = append(f.Updated, r.Form)
			fmt.Fprintf(w, `{"ok":true,"channel":%q,"ts":%q}`, r.Form.Get("channel"), r.Form.Get("ts"))
		default:
			io.WriteString(w, `{"ok":false,"error":"unknown_method"}`)
		}
	}))
	f.API = f.srv.URL + "/api/"
	t.Cleanup(f.srv.Close)
	return f
}

// socket is Slack's side of a Socket Mode WebSocket: it says hello, hands
// the connection to Envelope, and notes each acknowledgement.
func (f *Fake) socket(w http.ResponseWriter, r *http.Request) {
	ws, err := websocket.Accept(w, r, nil)
	if err != nil {
		return
	}
	defer ws.CloseNow()
	ctx := r.Context()
	if err := ws.Write(ctx, websocket.MessageText, []byte(`{"type":"hello","num_connections":1}`)); err != nil {
		return
	}
	f.Mu.Lock()
	f.Opened++
	f.Mu.Unlock()
	f.sockets <- ws
	for {
		_, data, err := ws.Read(ctx)
		if err != nil {
			return
		}
		var ack struct {
			ID string `json:"envelope_id"`
		}
		if json.Unmarshal(data, &ack) == nil && ack.ID != "" {
			f.Mu.Lock()
			f.Acked = append(f.Acked, ack.ID)
			f.Mu.Unlock()
		}
	}
}

// Socket waits for the next Socket Mode connection a client opens and
// answers it, for Envelope.
func (f *Fake) Socket(t testing.TB) *websocket.Conn {
	t.Helper()
	select {
	case ws := <-f.sockets:
		return ws
	case <-time.After(10 * time.Second):
		t.Fatal("no Socket Mode connection was opened")
		return nil
	}
}

// Envelope sends an envelope of kind (events_api, interactive,
// disconnect) with payload (JSON; "" for none) on ws, and answers its id.
func (f *Fake) Envelope(t testing.TB, ws *websocket.Conn, kind, payload string) string {
	t.Helper()
	f.Mu.Lock()
	f.envelope++
	id := fmt.Sprintf("env-%d", f.envelope)
	f.Mu.Unlock()
	e := map[string]any{"envelope_id": id, "type": kind}
	if payload != "" {
		e["payload"] = json.RawMessage(payload)
	}
	if kind == "disconnect" {
		e = map[string]any{"type": kind, "reason": "refresh_requested"}
	}
	data, _ := json.Marshal(e)
	if err := ws.Write(t.Context(), websocket.MessageText, data); err != nil {
		t.Fatal(err)
	}
	return id
}

// Sign signs a request of body as Slack does, with key, at the time at.
func Sign(r *http.Request, body string, at time.Time, key string) {
	ts := strconv.FormatInt(at.Unix(), 10)
	mac := hmac.New(sha256.New, []byte(key))
	io.WriteString(mac, "v0:"+ts+":"+body)
	r.Header.Set("X-Slack-Request-Timestamp", ts)
	r.Header.Set("X-Slack-Signature", "v0="+hex.EncodeToString(mac.Sum(nil)))
}

// Request is Slack's signed request of body to h, as of at: its status.
func Request(h http.Handler, contentType, body string, at time.Time, key string) int {
	r := httptest.NewRequest(http.MethodPost, "/hooks/slack", strings.NewReader(body))
	r.Header.Set("Content-Type", contentType)
	Sign(r, body, at, key)
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w.Code
}

// Event is the body of an Events API message event.
func Event(id, channel, channelType, user, text, ts, thread string) string {
	data, _ := json.Marshal(map[string]any{"type": "event_callback", "event_id": id, "team_id": "T1",
		"event": map[string]any{"type": "message", "channel": channel, "channel_type": channelType, "user": user, "text": text, "ts": ts, "thread_ts": thread}})
	return string(data)
}
