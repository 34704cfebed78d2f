package slack_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/agenthost/bots/internal/waittest"
	"github.com/agenthost/bots/route"
	"github.com/agenthost/bots/route/routetest"
	"github.com/agenthost/bots/route/slack"
	"github.com/agenthost/bots/route/slack/slacktest"
)

func dial(t *testing.T, f *slacktest.Fake) route.Conn {
	t.Helper()
	c, err := slack.Network{}.Dial(t.Context(), route.Dial{Settings: map[string]string{"api": f.API},
		Secrets: map[string]string{"token": slacktest.Token, "signingSecret": slacktest.Secret}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func nothing(t *testing.T, c route.Conn) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if m, err := c.Receive(ctx); err == nil {
		t.Errorf("received %+v, want nothing", m)
	}
}

func TestSlackDeliversADirectMessageOnceAndAnswersInMrkdwn(t *testing.T) {
	t.Parallel()
	f := slacktest.Start(t)
	c := dial(t, f)
	ev := slacktest.Event("Ev1", "D1", "im", "U1", "hello bot", "1700000000.000001", "")
	if code := slacktest.Request(c.(http.Handler), "application/json", ev, time.Now(), slacktest.Secret); code != http.StatusOK {
		t.Fatalf("the event was answered %d", code)
	}
	m := routetest.Receive(t, c)
	if m.From != "slack:U1" || m.Scope != (route.Scope{Kind: route.Direct, ID: "D1"}) || m.Text != "hello bot" || m.ID != "D1:1700000000.000001" {
		t.Fatalf("received %+v", m)
	}
	// Slack retries an event it thinks was not taken: it is delivered once.
	if code := slacktest.Request(c.(http.Handler), "application/json", ev, time.Now(), slacktest.Secret); code != http.StatusOK {
		t.Fatalf("the retry was answered %d", code)
	}
	nothing(t, c)
	ids, err := c.Send(t.Context(), m.Scope, "**hi** <@U2> & [docs](https://x.org)")
	if err != nil || len(ids) != 1 {
		t.Fatalf("Send: %v %v", ids, err)
	}
	f.Mu.Lock()
	got := f.Posted[0].Get("text")
	f.Mu.Unlock()
	if got != "*hi* &lt;@U2&gt; &amp; <https://x.org|docs>" {
		t.Errorf("chat.postMessage got %q", got)
	}
	if err := c.Edit(t.Context(), m.Scope, ids[0], "changed"); err != nil {
		t.Fatal(err)
	}
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if len(f.Updated) != 1 || f.Updated[0].Get("ts") != ids[0] || f.Updated[0].Get("text") != "changed" {
		t.Errorf("chat.update got %v", f.Updated)
	}
}

func TestSlackRefusesABadSignatureAndAStaleRequest(t *testing.T) {
	t.Parallel()
	f := slacktest.Start(t)
	c := dial(t, f)
	ev := slacktest.Event("Ev1", "D1", "im", "U1", "forged", "1.1", "")
	if code := slacktest.Request(c.(http.Handler), "application/json", ev, time.Now(), "another-secret-0123456789"); code != http.StatusUnauthorized {
		t.Errorf("a request signed with another secret was answered %d, want 401", code)
	}
	if code := slacktest.Request(c.(http.Handler), "application/json", ev, time.Now().Add(-10*time.Minute), slacktest.Secret); code != http.StatusUnauthorized {
		t.Errorf("a request ten minutes old was answered %d, want 401", code)
	}
	nothing(t, c)
}

func TestSlackAnswersTheURLCheck(t *testing.T) {
	t.Parallel()
	f := slacktest.Start(t)
	c := dial(t, f)
	body := `{"type":"url_verification","token":"x","challenge":"challenge-0123"}`
	r := httptest.NewRequest(http.MethodPost, "/hooks/slack", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	slacktest.Sign(r, body, time.Now(), slacktest.Secret)
	w := httptest.NewRecorder()
	c.(http.Handler).ServeHTTP(w, r)
	if w.Code != http.StatusOK || w.Body.String() != "challenge-0123" {
		t.Errorf("the URL check was answered %d %q", w.Code, w.Body)
	}
}

func TestSlackLeavesOutTheBotsOwnAndScopesChannelsAndThreads(t *testing.T) {
	t.Parallel()
	f := slacktest.Start(t)
	c := dial(t, f)
	slacktest.Request(c.(http.Handler), "application/json", slacktest.Event("Ev1", "C1", "channel", "UBOT", "mine", "1.1", ""), time.Now(), slacktest.Secret)
	slacktest.Request(c.(http.Handler), "application/json", slacktest.Event("Ev2", "C1", "channel", "U1", "in a thread", "1.3", "1.2"), time.Now(), slacktest.Secret)
	m := routetest.Receive(t, c)
	if m.Text != "in a thread" || m.Scope != (route.Scope{Kind: route.Thread, ID: "C1", Thread: "1.2"}) {
		t.Fatalf("received %+v, want the thread's message and not the bot's own", m)
	}
	if _, err := c.Send(t.Context(), m.Scope, "answer"); err != nil {
		t.Fatal(err)
	}
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if f.Posted[0].Get("thread_ts") != "1.2" || f.Posted[0].Get("channel") != "C1" {
		t.Errorf("the reply went to %v", f.Posted[0])
	}
}

// askAndPress asks alice in to "Which colour?" (red, blue) and answers the
// block_actions payload Slack sends when she presses the option-th
// button.
func askAndPress(t *testing.T, f *slacktest.Fake, c route.Conn, to route.Scope, option int) string {
	t.Helper()
	if _, err := c.Ask(t.Context(), to, route.Question{ID: "q1", Markdown: "Which colour?", Options: []route.Option{{ID: "red", Label: "Red"}, {ID: "blue", Label: "Blue"}}}); err != nil {
		t.Fatal(err)
	}
	f.Mu.Lock()
	var blocks []map[string]any
	json.Unmarshal([]byte(f.Posted[len(f.Posted)-1].Get("blocks")), &blocks)
	f.Mu.Unlock()
	if len(blocks) != 2 || blocks[1]["type"] != "actions" {
		t.Fatalf("the question's blocks are %v", blocks)
	}
	b := blocks[1]["elements"].([]any)[option].(map[string]any)
	payload, _ := json.Marshal(map[string]any{"type": "block_actions", "trigger_id": "T-1",
		"user": map[string]any{"id": "U1", "name": "alice"}, "channel": map[string]any{"id": to.ID},
		"message": map[string]any{"ts": "1700000000.000001"},
		"actions": []any{map[string]any{"block_id": "question", "action_id": b["action_id"], "value": b["value"], "action_ts": "1.5", "type": "button"}}})
	return string(payload)
}

func TestSlackAsksWithButtonsAndAPressComesBackAsAnAnswer(t *testing.T) {
	t.Parallel()
	f := slacktest.Start(t)
	c := dial(t, f)
	to := route.Scope{Kind: route.Direct, ID: "D1"}
	payload := askAndPress(t, f, c, to, 1)
	body := url.Values{"payload": {payload}}.Encode()
	if code := slacktest.Request(c.(http.Handler), "application/x-www-form-urlencoded", body, time.Now(), slacktest.Secret); code != http.StatusOK {
		t.Fatalf("the press was answered %d", code)
	}
	m := routetest.Receive(t, c)
	if m.Answer == nil || m.Answer.Question != "q1" || m.Answer.Option != "blue" || m.From != "slack:U1" || m.Scope != to {
		t.Fatalf("the press came back as %+v", m)
	}
}

func TestSlackWaitsARateLimitsRetryAfter(t *testing.T) {
	t.Parallel()
	f := slacktest.Start(t)
	c := dial(t, f)
	f.Mu.Lock()
	f.Limited = 1
	f.Mu.Unlock()
	start := time.Now()
	if _, err := c.Send(t.Context(), route.Scope{Kind: route.Direct, ID: "D1"}, "after the wait"); err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited < time.Second {
		t.Errorf("the post after a 429 went after %v, want the Retry-After of 1s", waited)
	}
}

func TestSlackRefusesABadTokenWithoutShowingIt(t *testing.T) {
	t.Parallel()
	f := slacktest.Start(t)
	_, err := slack.Network{}.Dial(t.Context(), route.Dial{Settings: map[string]string{"api": f.API},
		Secrets: map[string]string{"token": "xoxb-wrong-token-0123456789", "signingSecret": slacktest.Secret}})
	if err == nil || strings.Contains(err.Error(), "wrong-token") || !strings.Contains(err.Error(), "refused") {
		t.Errorf("a bad token: %v", err)
	}
}

// dialSocket dials the fake in Socket Mode and answers the connection and
// Slack's side of its WebSocket.
func dialSocket(t *testing.T, f *slacktest.Fake) (route.Conn, *websocket.Conn) {
	t.Helper()
	c, err := slack.Network{}.Dial(t.Context(), route.Dial{Settings: map[string]string{"api": f.API},
		Secrets: map[string]string{"token": slacktest.Token, "appToken": slacktest.AppToken}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, f.Socket(t)
}

// acked waits until the fake has the envelope id acknowledged.
func acked(t *testing.T, f *slacktest.Fake, id string) {
	t.Helper()
	waittest.For(t, "the envelope "+id+" acknowledged", func() bool {
		f.Mu.Lock()
		defer f.Mu.Unlock()
		return slices.Contains(f.Acked, id)
	})
}

// TestSlackInSocketModeHearsAMessageOnceAndAcknowledgesEachEnvelope: with
// an app token the connection opens a WebSocket to Slack (no address of
// the host's need be public), acknowledges every envelope, and delivers
// an event Slack sends again once.
func TestSlackInSocketModeHearsAMessageOnceAndAcknowledgesEachEnvelope(t *testing.T) {
	t.Parallel()
	f := slacktest.Start(t)
	c, ws := dialSocket(t, f)
	if _, served := c.(http.Handler); served {
		t.Error("a Socket Mode connection serves Slack's requests too: nothing checks their signature")
	}
	// An envelope that does not parse is left out; the WebSocket goes on.
	if err := ws.Write(t.Context(), websocket.MessageText, []byte(`{"type": 7`)); err != nil {
		t.Fatal(err)
	}
	ev := slacktest.Event("Ev1", "D1", "im", "U1", "hello over the socket", "1700000000.000001", "")
	first := f.Envelope(t, ws, "events_api", ev)
	m := routetest.Receive(t, c)
	if m.From != "slack:U1" || m.Scope != (route.Scope{Kind: route.Direct, ID: "D1"}) || m.Text != "hello over the socket" {
		t.Fatalf("received %+v", m)
	}
	acked(t, f, first)
	acked(t, f, f.Envelope(t, ws, "events_api", ev)) // a retry: acknowledged, not delivered again
	nothing(t, c)
	if _, err := c.Send(t.Context(), m.Scope, "answered"); err != nil {
		t.Fatal(err)
	}
	f.Mu.Lock()
	defer f.Mu.Unlock()
	if len(f.Posted) != 1 || f.Posted[0].Get("text") != "answered" || f.Posted[0].Get("channel") != "D1" {
		t.Errorf("chat.postMessage got %v", f.Posted)
	}
}

func TestSlackInSocketModeTakesAButtonPressAsAnAnswer(t *testing.T) {
	t.Parallel()
	f := slacktest.Start(t)
	c, ws := dialSocket(t, f)
	to := route.Scope{Kind: route.Direct, ID: "D1"}
	f.Envelope(t, ws, "interactive", askAndPress(t, f, c, to, 0))
	if m := routetest.Receive(t, c); m.Answer == nil || m.Answer.Question != "q1" || m.Answer.Option != "red" || m.Scope != to {
		t.Fatalf("the press came back as %+v", m)
	}
}

// TestSlackInSocketModeEndsWhenSlackAsksForANewConnection: Slack asks a
// Socket Mode client to connect again now and then (disconnect); Receive
// ends, saying so, and the relay dials again.
func TestSlackInSocketModeEndsWhenSlackAsksForANewConnection(t *testing.T) {
	t.Parallel()
	f := slacktest.Start(t)
	c, ws := dialSocket(t, f)
	f.Envelope(t, ws, "disconnect", "")
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := c.Receive(ctx); err == nil || ctx.Err() != nil || !errors.Is(err, route.ErrRedial) || !strings.Contains(err.Error(), "refresh_requested") {
		t.Errorf("Receive after a disconnect: %v, want ErrRedial, saying why", err)
	}
}

func TestSlackRefusesABadAppTokenWithoutShowingItAndAConnectionWithNeitherWay(t *testing.T) {
	t.Parallel()
	f := slacktest.Start(t)
	_, err := slack.Network{}.Dial(t.Context(), route.Dial{Settings: map[string]string{"api": f.API},
		Secrets: map[string]string{"token": slacktest.Token, "appToken": "xapp-wrong-token-0123456789"}})
	if err == nil || strings.Contains(err.Error(), "wrong-token") || !strings.Contains(err.Error(), "app token was refused") {
		t.Errorf("a bad app token: %v", err)
	}
	_, err = slack.Network{}.Dial(t.Context(), route.Dial{Settings: map[string]string{"api": f.API},
		Secrets: map[string]string{"token": slacktest.Token}})
	if err == nil || !strings.Contains(err.Error(), "either the app's xapp- token (appToken, for Socket Mode) or its signing secret") {
		t.Errorf("neither an app token nor a signing secret: %v", err)
	}
}
