package telegram_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/bots/route"
	"github.com/agenthost/bots/route/telegram"
)

const token = "123456:fake-telegram-token-0123456789"

// fake is the Bot API as its documentation describes it, enough for the
// adapter: getMe, getUpdates (long polling with offsets), sendMessage,
// editMessageText, answerCallbackQuery.
type fake struct {
	t   *testing.T
	srv *httptest.Server

	mu        sync.Mutex
	updates   []map[string]any // queued, by update_id order
	nextID    int64
	offsets   []int64 // the offsets getUpdates was asked
	sent      []map[string]any
	edited    []map[string]any
	answered  []string
	tooMany   int // the next this many sendMessage answer 429
	changed   chan struct{}
	delivered map[int64]int // update_id → times getUpdates answered it
}

func newFake(t *testing.T) *fake {
	f := &fake{t: t, nextID: 1, changed: make(chan struct{}, 1), delivered: map[int64]int{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fake) poke() {
	select {
	case f.changed <- struct{}{}:
	default:
	}
}

func (f *fake) serve(w http.ResponseWriter, r *http.Request) {
	method, ok := strings.CutPrefix(r.URL.Path, "/bot"+token+"/")
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
			f.mu.Lock()
			f.offsets = append(f.offsets, offset)
			var out []map[string]any
			for _, u := range f.updates {
				if id := u["update_id"].(int64); id >= offset {
					out = append(out, u)
					f.delivered[id]++
				}
			}
			f.mu.Unlock()
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
		f.mu.Lock()
		if f.tooMany > 0 {
			f.tooMany--
			f.mu.Unlock()
			w.WriteHeader(http.StatusTooManyRequests)
			json.NewEncoder(w).Encode(map[string]any{"ok": false, "error_code": 429, "description": "Too Many Requests: retry after 1", "parameters": map[string]any{"retry_after": 1}})
			return
		}
		f.sent = append(f.sent, p)
		id := len(f.sent) + 100
		f.mu.Unlock()
		answer(map[string]any{"message_id": id})
	case "editMessageText":
		f.mu.Lock()
		f.edited = append(f.edited, p)
		f.mu.Unlock()
		answer(true)
	case "answerCallbackQuery":
		f.mu.Lock()
		f.answered = append(f.answered, p["callback_query_id"].(string))
		f.mu.Unlock()
		answer(true)
	default:
		json.NewEncoder(w).Encode(map[string]any{"ok": false, "error_code": 404, "description": "Not Found"})
	}
}

// push queues an update.
func (f *fake) push(u map[string]any) {
	f.mu.Lock()
	u["update_id"] = f.nextID
	f.nextID++
	f.updates = append(f.updates, u)
	f.mu.Unlock()
	f.poke()
}

func privateText(from int64, text string) map[string]any {
	return map[string]any{"message": map[string]any{"message_id": 7, "date": 1764800000, "text": text,
		"from": map[string]any{"id": from, "is_bot": false, "first_name": "Alice", "username": "alice"},
		"chat": map[string]any{"id": from, "type": "private"}}}
}

func (f *fake) dial(t *testing.T) route.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	c, err := telegram.Network{}.Dial(ctx, route.Dial{Settings: map[string]string{"api": f.srv.URL}, Secrets: map[string]string{"token": token}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func receive(t *testing.T, c route.Conn) route.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	m, err := c.Receive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestTelegramDeliversAPrivateMessageAndAnswersItInHTML(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	c := f.dial(t)
	f.push(privateText(1001, "hello bot"))
	m := receive(t, c)
	if m.From != "telegram:1001" || m.Scope != (route.Scope{Kind: route.Direct, ID: "1001"}) || m.Text != "hello bot" || m.Name != "@alice" || m.ID != "1001:7" {
		t.Fatalf("received %+v", m)
	}
	ids, err := c.Send(t.Context(), m.Scope, "**hi** <you> & `x<y`")
	if err != nil || len(ids) != 1 || ids[0] != "101" {
		t.Fatalf("Send: %v %v", ids, err)
	}
	f.mu.Lock()
	got := f.sent[0]
	f.mu.Unlock()
	if got["text"] != "<b>hi</b> &lt;you&gt; &amp; <code>x&lt;y</code>" || got["parse_mode"] != "HTML" || got["chat_id"] != float64(1001) {
		t.Errorf("sendMessage got %v", got)
	}
	if err := c.Edit(t.Context(), m.Scope, ids[0], "changed"); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	if len(f.edited) != 1 || f.edited[0]["message_id"] != float64(101) || f.edited[0]["text"] != "changed" {
		t.Errorf("editMessageText got %v", f.edited)
	}
	f.mu.Unlock()
}

func TestTelegramConfirmsUpdatesSoNoneIsDeliveredTwice(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	c := f.dial(t)
	f.push(privateText(1001, "one"))
	f.push(privateText(1001, "two"))
	if a, b := receive(t, c), receive(t, c); a.Text != "one" || b.Text != "two" {
		t.Fatalf("received %q then %q", a.Text, b.Text)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		f.mu.Lock()
		asked := f.offsets[len(f.offsets)-1]
		f.mu.Unlock()
		if asked == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("getUpdates was last asked from offset %d, want 3", asked)
		}
		time.Sleep(5 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if m, err := c.Receive(ctx); err == nil {
		t.Errorf("an update came again: %+v", m)
	}
}

func TestTelegramAsksWithButtonsAndAPressComesBackAsAnAnswer(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	c := f.dial(t)
	to := route.Scope{Kind: route.Direct, ID: "1001"}
	long := strings.Repeat("an option id far longer than Telegram's sixty-four bytes of callback data ", 2)
	if _, err := c.Ask(t.Context(), to, route.Question{ID: "q1", Markdown: "Which colour?", Options: []route.Option{{ID: "red", Label: "Red"}, {ID: long, Label: "Blue"}}}); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	kb := f.sent[0]["reply_markup"].(map[string]any)["inline_keyboard"].([]any)
	blue := kb[1].([]any)[0].(map[string]any)
	f.mu.Unlock()
	if blue["text"] != "Blue" || len(blue["callback_data"].(string)) > 64 {
		t.Fatalf("the keyboard is %v", kb)
	}
	f.push(map[string]any{"callback_query": map[string]any{"id": "cb-1", "data": blue["callback_data"],
		"from":    map[string]any{"id": 1001, "first_name": "Alice"},
		"message": map[string]any{"message_id": 101, "chat": map[string]any{"id": 1001, "type": "private"}}}})
	m := receive(t, c)
	if m.Answer == nil || m.Answer.Question != "q1" || m.Answer.Option != long || m.From != "telegram:1001" {
		t.Fatalf("the press came back as %+v", m)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.answered) != 1 || f.answered[0] != "cb-1" {
		t.Errorf("answerCallbackQuery got %v", f.answered)
	}
}

func TestTelegramWaitsTheRetryAfterOfA429(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	c := f.dial(t)
	f.mu.Lock()
	f.tooMany = 1
	f.mu.Unlock()
	start := time.Now()
	if _, err := c.Send(t.Context(), route.Scope{Kind: route.Direct, ID: "1001"}, "after the wait"); err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited < time.Second {
		t.Errorf("the send after a 429 went after %v, want the retry_after of 1s", waited)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.sent) != 1 {
		t.Errorf("%d messages sent, want 1", len(f.sent))
	}
}

func TestTelegramGroupsAndTopicsAreScopesAndTheBotsOwnIsNotDelivered(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	c := f.dial(t)
	f.push(map[string]any{"message": map[string]any{"message_id": 1, "text": "mine", "from": map[string]any{"id": 42, "is_bot": true},
		"chat": map[string]any{"id": -100, "type": "supergroup"}}})
	f.push(map[string]any{"message": map[string]any{"message_id": 2, "text": "in a topic", "message_thread_id": 9,
		"from": map[string]any{"id": 1001, "first_name": "Alice"}, "chat": map[string]any{"id": -100, "type": "supergroup"}}})
	m := receive(t, c)
	if m.Text != "in a topic" || m.Scope != (route.Scope{Kind: route.Thread, ID: "-100", Thread: "9"}) {
		t.Fatalf("received %+v, want the topic's message and not the bot's own", m)
	}
	if _, err := c.Send(t.Context(), m.Scope, "answer"); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.sent[0]["message_thread_id"] != float64(9) || f.sent[0]["chat_id"] != float64(-100) {
		t.Errorf("the reply went to %v", f.sent[0])
	}
}

func TestTelegramRefusesABadTokenWithoutShowingIt(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	_, err := telegram.Network{}.Dial(t.Context(), route.Dial{Settings: map[string]string{"api": f.srv.URL}, Secrets: map[string]string{"token": "999:wrong-token-0123456789"}})
	if err == nil || strings.Contains(err.Error(), "wrong-token") || !strings.Contains(err.Error(), "refused") {
		t.Errorf("a bad token: %v", err)
	}
	_, err = telegram.Network{}.Dial(t.Context(), route.Dial{Settings: map[string]string{"api": "http://127.0.0.1:1"}, Secrets: map[string]string{"token": token}})
	if err == nil || strings.Contains(err.Error(), token) {
		t.Errorf("an unreachable API: %v", err)
	}
}
