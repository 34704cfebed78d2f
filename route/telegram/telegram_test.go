package telegram_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/bots/internal/waittest"
	"github.com/agenthost/bots/route"
	"github.com/agenthost/bots/route/routetest"
	"github.com/agenthost/bots/route/telegram"
	"github.com/agenthost/bots/route/telegram/telegramtest"
)

func dial(t *testing.T, f *telegramtest.Fake) route.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	c, err := telegram.Network{}.Dial(ctx, route.Dial{Settings: map[string]string{"api": f.URL}, Secrets: map[string]string{"token": telegramtest.Token}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestTelegramDeliversAPrivateMessageAndAnswersItInHTML(t *testing.T) {
	t.Parallel()
	f := telegramtest.Start(t)
	c := dial(t, f)
	f.Push(telegramtest.PrivateText(1001, "hello bot"))
	m := routetest.Receive(t, c)
	if m.From != "telegram:1001" || m.Scope != (route.Scope{Kind: route.Direct, ID: "1001"}) || m.Text != "hello bot" || m.Name != "@alice" || m.ID != "1001:7" {
		t.Fatalf("received %+v", m)
	}
	ids, err := c.Send(t.Context(), m.Scope, "**hi** <you> & `x<y`")
	if err != nil || len(ids) != 1 || ids[0] != "101" {
		t.Fatalf("Send: %v %v", ids, err)
	}
	f.Mu.Lock()
	got := f.Sent[0]
	f.Mu.Unlock()
	if got["text"] != "<b>hi</b> &lt;you&gt; &amp; <code>x&lt;y</code>" || got["parse_mode"] != "HTML" || got["chat_id"] != float64(1001) {
		t.Errorf("sendMessage got %v", got)
	}
	if err := c.Edit(t.Context(), m.Scope, ids[0], "changed"); err != nil {
		t.Fatal(err)
	}
	f.Mu.Lock()
	if len(f.Edited) != 1 || f.Edited[0]["message_id"] != float64(101) || f.Edited[0]["text"] != "changed" {
		t.Errorf("editMessageText got %v", f.Edited)
	}
	f.Mu.Unlock()
}

func TestTelegramConfirmsUpdatesSoNoneIsDeliveredTwice(t *testing.T) {
	t.Parallel()
	f := telegramtest.Start(t)
	c := dial(t, f)
	f.Push(telegramtest.PrivateText(1001, "one"))
	f.Push(telegramtest.PrivateText(1001, "two"))
	if a, b := routetest.Receive(t, c), routetest.Receive(t, c); a.Text != "one" || b.Text != "two" {
		t.Fatalf("received %q then %q", a.Text, b.Text)
	}
	var asked int64
	if !waittest.Within(10*time.Second, func() bool {
		f.Mu.Lock()
		asked = f.Offsets[len(f.Offsets)-1]
		f.Mu.Unlock()
		return asked == 3
	}) {
		t.Fatalf("getUpdates was last asked from offset %d, want 3", asked)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if m, err := c.Receive(ctx); err == nil {
		t.Errorf("an update came again: %+v", m)
	}
}

func TestTelegramAsksWithButtonsAndAPressComesBackAsAnAnswer(t *testing.T) {
	t.Parallel()
	f := telegramtest.Start(t)
	c := dial(t, f)
	to := route.Scope{Kind: route.Direct, ID: "1001"}
	long := strings.Repeat("an option id far longer than Telegram's sixty-four bytes of callback data ", 2)
	if _, err := c.Ask(t.Context(), to, route.Question{ID: "q1", Markdown: "Which colour?", Options: []route.Option{{ID: "red", Label: "Red"}, {ID: long, Label: "Blue"}}}); err != nil {
		t.Fatal(err)
	}
	f.Mu.Lock()
	kb := f.Sent[0]["reply_markup"].(map[string]any)["inline_keyboard"].([]any)
	blue := kb[1].([]any)[0].(map[string]any)
	f.Mu.Unlock()
	if blue["text"] != "Blue" || len(blue["callback_data"].(string)) > 64 {
		t.Fatalf("the keyboard is %v", kb)
	}
	f.Push(map[string]any{"callback_query": map[string]any{"id": "cb-1", "data": blue["callback_data"],
		"from":    map[string]any{"id": 1001, "first_name": "Alice"},
		"message": map[string]any{"message_id": 101, "chat": map[string]any{"id": 1001, "type": "private"}}}})
	m := routetest.Receive(t, c)
	if m.Answer == nil || m.Answer.Question != "q1" || m.Answer.Option != long || m.From != "telegram:1001" {
		t.Fatalf("the press came back as %+v", m)
	}
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if len(f.Answered) != 1 || f.Answered[0] != "cb-1" {
		t.Errorf("answerCallbackQuery got %v", f.Answered)
	}
}

func TestTelegramWaitsTheRetryAfterOfA429(t *testing.T) {
	t.Parallel()
	f := telegramtest.Start(t)
	c := dial(t, f)
	f.Mu.Lock()
	f.TooMany = 1
	f.Mu.Unlock()
	start := time.Now()
	if _, err := c.Send(t.Context(), route.Scope{Kind: route.Direct, ID: "1001"}, "after the wait"); err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited < time.Second {
		t.Errorf("the send after a 429 went after %v, want the retry_after of 1s", waited)
	}
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if len(f.Sent) != 1 {
		t.Errorf("%d messages sent, want 1", len(f.Sent))
	}
}

func TestTelegramGroupsAndTopicsAreScopesAndTheBotsOwnIsNotDelivered(t *testing.T) {
	t.Parallel()
	f := telegramtest.Start(t)
	c := dial(t, f)
	f.Push(map[string]any{"message": map[string]any{"message_id": 1, "text": "mine", "from": map[string]any{"id": 42, "is_bot": true},
		"chat": map[string]any{"id": -100, "type": "supergroup"}}})
	f.Push(map[string]any{"message": map[string]any{"message_id": 2, "text": "in a topic", "message_thread_id": 9,
		"from": map[string]any{"id": 1001, "first_name": "Alice"}, "chat": map[string]any{"id": -100, "type": "supergroup"}}})
	m := routetest.Receive(t, c)
	if m.Text != "in a topic" || m.Scope != (route.Scope{Kind: route.Thread, ID: "-100", Thread: "9"}) {
		t.Fatalf("received %+v, want the topic's message and not the bot's own", m)
	}
	if _, err := c.Send(t.Context(), m.Scope, "answer"); err != nil {
		t.Fatal(err)
	}
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if f.Sent[0]["message_thread_id"] != float64(9) || f.Sent[0]["chat_id"] != float64(-100) {
		t.Errorf("the reply went to %v", f.Sent[0])
	}
}

func TestTelegramRefusesABadTokenWithoutShowingIt(t *testing.T) {
	t.Parallel()
	f := telegramtest.Start(t)
	_, err := telegram.Network{}.Dial(t.Context(), route.Dial{Settings: map[string]string{"api": f.URL}, Secrets: map[string]string{"token": "999:wrong-token-0123456789"}})
	if err == nil || strings.Contains(err.Error(), "wrong-token") || !strings.Contains(err.Error(), "refused") {
		t.Errorf("a bad token: %v", err)
	}
	_, err = telegram.Network{}.Dial(t.Context(), route.Dial{Settings: map[string]string{"api": "http://127.0.0.1:1"}, Secrets: map[string]string{"token": telegramtest.Token}})
	if err == nil || strings.Contains(err.Error(), telegramtest.Token) {
		t.Errorf("an unreachable API: %v", err)
	}
}
