// Package slacktest is a fake of the part of Slack's Web API the Slack
// adapter calls (auth.test, chat.postMessage, chat.update: form-encoded
// posts, as documented), and Slack's side of the Events API: signed
// requests.
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
)

// Token and Secret are the bot token the fake takes and the signing
// secret Sign signs with.
const (
	Token  = "xoxb-fake-slack-token-0123456789"
	Secret = "fake-signing-secret-0123456789"
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
}

// Start starts a fake; the test's end stops it.
func Start(t testing.TB) *Fake {
	f := &Fake{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
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
