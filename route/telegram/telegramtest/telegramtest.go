// Package telegramtest is a fake of the Telegram Bot API, as its
// documentation describes it, for tests: getMe, getUpdates (long polling
// with offsets), sendMessage, editMessageText, answerCallbackQuery.
package telegramtest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// Token is the bot token the fake takes.
const Token = "123456:fake-telegram-token-0123456789"

// Fake is a running fake Bot API. Its fields are guarded by Mu.
type Fake struct {
	// URL is its address, the api setting of a connection.
	URL string
	srv *httptest.Server

	// Mu guards the fields below.
	Mu      sync.Mutex
	updates []map[string]any // queued, by update_id order
	nextID  int64
	// Offsets are the offsets getUpdates was asked from, in order.
	Offsets []int64
	// Sent and Edited are the params of each sendMessage and
	// editMessageText; Answered the ids of the callback queries answered.
	Sent, Edited []map[string]any
	Answered     []string
	// TooMany makes the next this many sendMessage answer 429 (retry
	// after 1 s).
	TooMany int
	changed chan struct{}
}

// Start starts a fake; the test's end stops it.
func Start(t testing.TB) *Fake {
	f := &Fake{nextID: 1, changed: make(chan struct{}, 1)}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	f.URL = f.srv.URL
	t.Cleanup(f.srv.Close)
	return f
}

func (f *Fake) poke() {
	select {
	case f.changed <- struct{}{}:
	default:
	}
}

func (f *Fake) serve(w http.ResponseWriter, r *http.Request) {
	method, ok := strings.CutPrefix(r.URL.Path, "/bot"+Token+"/")
	if !ok {
		w.WriteHeader(http.StatusUnauthorized)
		json.NewEncoder(w).Encode(map[string]any{"ok": false, "error_code": 401, "description": "Unauthorized"})
		return
	}
	var p map[string]any
	json.NewDecoder(r.Body).Decode(&p)
	answer := func(result any) { json.NewEncoder(w).Encode(map[string]any{"ok": true, "result": result}) }
	switch method {
	case "getMe":
		answer(map[string]any{"id": 42, "is_bot": true, "username": "motion_bot"})
	case "getUpdates":
		offset := int64(p["offset"].(float64))
		deadline := time.After(2 * time.Second)
		for {
			f.Mu.Lock()
			f.Offsets = append(f.Offsets, offset)
			var out []map[string]any
			for _, u := range f.updates {
				if id := u["update_id"].(int64); id >= offset {
					out = append(out, u)
				}
			}
			f.Mu.Unlock()
			if len(out) > 0 {
				answer(out)
				return
			}
			select {
			case <-f.changed:
			case <-deadline:
				answer([]any{})
				return
			case <-r.Context().Done():
				return
			}
		}
	case "sendMessage":
		f.Mu.Lock()
		if f.TooMany > 0 {
			f.TooMany--
			f.Mu.Unlock()
			w.WriteHeader(http.StatusTooManyRequests)
			json.NewEncoder(w).Encode(map[string]any{"ok": false, "error_code": 429, "description": "Too Many Requests: retry after 1", "parameters": map[string]any{"retry_after": 1}})
			return
		}
		f.Sent = append(f.Sent, p)
		id := len(f.Sent) + 100
		f.Mu.Unlock()
		answer(map[string]any{"message_id": id})
	case "editMessageText":
		f.Mu.Lock()
		f.Edited = append(f.Edited, p)
		f.Mu.Unlock()
		answer(true)
	case "answerCallbackQuery":
		f.Mu.Lock()
		f.Answered = append(f.Answered, p["callback_query_id"].(string))
		f.Mu.Unlock()
		answer(true)
	default:
		json.NewEncoder(w).Encode(map[string]any{"ok": false, "error_code": 404, "description": "Not Found"})
	}
}

// Push queues an update; its update_id is set.
func (f *Fake) Push(u map[string]any) {
	f.Mu.Lock()
	u["update_id"] = f.nextID
	f.nextID++
	f.updates = append(f.updates, u)
	f.Mu.Unlock()
	f.poke()
}

// PrivateText is the update of a private message from the user.
func PrivateText(from int64, text string) map[string]any {
	return map[string]any{"message": map[string]any{"message_id": 7, "date": 1764800000, "text": text,
		"from": map[string]any{"id": from, "is_bot": false, "first_name": "Alice", "username": "alice"},
		"chat": map[string]any{"id": from, "type": "private"}}}
}
