package acp

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/record"
	"github.com/agenthost/bots/wake"
	"github.com/agenthost/bots/wake/agents/filesessions"
	"github.com/agenthost/bots/wake/local"
	"github.com/agenthost/bots/wake/memrows"
)

// mainChat is a main chat a Waker answers into: it applies what the wake
// emits with the reducers, as the bot-chat provider does.
type mainChat struct {
	mu      sync.Mutex
	chat    ahp.ChatState
	changed chan struct{}
	shown   []string // every text the subagent call showed, in order
}

func newMainChat(turnID, text string) *mainChat {
	m := &mainChat{changed: make(chan struct{}, 1)}
	m.chat = ahp.ChatState{ChatSummary: ahp.ChatSummary{Resource: "ahp-chat://main", Status: ahp.StatusIdle}}
	m.chat = ahp.ApplyChat(m.chat, ahp.TurnStarted(turnID, time.Now(), ahp.UserMessage(text)))
	return m
}

func (m *mainChat) Chat(a ahp.Action) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.chat.ActiveTurn == nil {
		return false
	}
	m.chat = ahp.ApplyChat(m.chat, a)
	for _, text := range subagentText(m.chat) {
		if len(m.shown) == 0 || m.shown[len(m.shown)-1] != text {
			m.shown = append(m.shown, text)
		}
	}
	m.signal()
	return true
}

// texts returns every text the subagent call showed, in order.
func (m *mainChat) texts() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.shown)
}

func (m *mainChat) Session(a ahp.Action) { m.signal() }

func (m *mainChat) signal() {
	select {
	case m.changed <- struct{}{}:
	default:
	}
}

func (m *mainChat) apply(a ahp.Action) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.chat = ahp.ApplyChat(m.chat, a)
}

// wait waits until cond holds of the main chat.
func (m *mainChat) wait(t *testing.T, what string, cond func(ahp.ChatState) bool) ahp.ChatState {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		m.mu.Lock()
		c := m.chat
		m.mu.Unlock()
		if cond(c) {
			return c
		}
		select {
		case <-m.changed:
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

func (m *mainChat) ended(t *testing.T) ahp.Turn {
	t.Helper()
	c := m.wait(t, "the main turn to end", func(c ahp.ChatState) bool { return c.ActiveTurn == nil })
	return c.Turns[len(c.Turns)-1]
}

func markdown(turn ahp.Turn) []string { return turn.Replies() }

// wakeEnv is a Waker on a local.Host running the fake agent.
type wakeEnv struct {
	w     *wake.Waker
	bot   record.Record
	turns int
	close func() // closes the Waker and its host, when the env made them
}

// newWakeEnvOn is a wakeEnv of bot Motion in dir on w.
func newWakeEnvOn(w *wake.Waker, dir string) *wakeEnv {
	return &wakeEnv{w: w, bot: record.Record{ID: "motion", Name: "Motion", Workspace: dir, Owner: "user:soft", Provider: "fake"}}
}

func newWakeEnv(t *testing.T) *wakeEnv {
	t.Helper()
	return newWakeEnvWith(t, nil)
}

// newWakeEnvWith is newWakeEnv with the harness's Config changed by mod.
func newWakeEnvWith(t *testing.T, mod func(*Config)) *wakeEnv {
	t.Helper()
	h := newHarness(t, mod)
	host, err := local.New(local.Config{Harnesses: map[string]wake.Harness{"fake": h}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { host.Close() })
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "AGENTS.md"), []byte("---\nname: Motion\n---\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	w, err := wake.New(wake.Config{Host: host, Rows: &memrows.Rows{}, DefaultAgent: "fake"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return newWakeEnvOn(w, dir)
}

func (e *wakeEnv) say(text string) (*mainChat, *wake.Turn) {
	e.turns++
	id := "turn-" + strings.Repeat("a", e.turns)
	m := newMainChat(id, text)
	return m, e.w.Wake(wake.Message{Bot: e.bot, Person: "user:soft", Session: "ahp-session:/main", Chat: "ahp-chat://main",
		TurnID: id, Text: text, StartedAt: time.Now()}, m)
}

func TestWakePostMessageReachesTheMainChat(t *testing.T) {
	t.Parallel()
	e := newWakeEnv(t)
	m, _ := e.say("post hello from the agent")
	turn := m.ended(t)
	if got := markdown(turn); len(got) != 1 || got[0] != "hello from the agent" {
		t.Errorf("main turn texts = %q (state %s)", got, turn.State)
	}
	m, _ = e.say("post again")
	if got := markdown(m.ended(t)); len(got) != 1 || got[0] != "again" {
		t.Errorf("second message: %q", got)
	}
}

func TestWakePermissionIsRelayedToTheMainChat(t *testing.T) {
	t.Parallel()
	e := newWakeEnv(t)
	m, turn := e.say("permit")
	var call *ahp.ToolCallState
	c := m.wait(t, "an approval in the main chat", func(c ahp.ChatState) bool {
		if c.ActiveTurn == nil {
			return false
		}
		for _, p := range c.ActiveTurn.ResponseParts {
			if p.ToolCall != nil && p.ToolCall.Status == ahp.ToolCallStatusPendingConfirmation {
				call = p.ToolCall
				return true
			}
		}
		return false
	})
	a := ahp.ToolCallConfirmed(c.ActiveTurn.ID, call.ToolCallID, true)
	m.apply(a)
	if err := turn.Answer(testCtx(t), a); err != nil {
		t.Fatal(err)
	}
	if got := markdown(m.ended(t)); len(got) != 1 || got[0] != "allowed" {
		t.Errorf("main turn texts = %q", got)
	}
}

func TestWakeCrashFailsTheMainTurn(t *testing.T) {
	t.Parallel()
	e := newWakeEnv(t)
	m, _ := e.say("crash")
	turn := m.ended(t)
	if turn.State != ahp.TurnStateError {
		t.Errorf("main turn state = %s, want error", turn.State)
	}
	m, _ = e.say("post recovered")
	if got := markdown(m.ended(t)); len(got) != 1 || got[0] != "recovered" {
		t.Errorf("after the crash: %q", got)
	}
}

func TestWakeStopCancelsTheAgentTurn(t *testing.T) {
	t.Parallel()
	e := newWakeEnv(t)
	m, turn := e.say("sleep")
	c := m.wait(t, "the back turn to start", func(c ahp.ChatState) bool {
		if c.ActiveTurn == nil {
			return false
		}
		for _, p := range c.ActiveTurn.ResponseParts {
			if p.ToolCall != nil && p.ToolCall.ToolName == wake.SubagentTool {
				return true
			}
		}
		return false
	})
	m.apply(ahp.TurnCancelled(c.ActiveTurn.ID, 0))
	turn.Stop()
	if got := m.ended(t).State; got != ahp.TurnStateCancelled {
		t.Errorf("stopped main turn state = %s", got)
	}
	m, _ = e.say("post still here")
	if got := markdown(m.ended(t)); len(got) != 1 || got[0] != "still here" {
		t.Errorf("after the stop: %q", got)
	}
}

// backTurn sends text to a local.Host session and returns its back turn once
// it ended (the session's first turn of that text).
func backTurn(t *testing.T, host *local.Host, session, id, text string) ahp.Turn {
	t.Helper()
	ctx := testCtx(t)
	state, actions, err := host.Follow(ctx, session)
	if err != nil {
		t.Fatal(err)
	}
	if err := host.Send(ctx, session, wake.Pending{Kind: ahp.PendingQueued, ID: id, Message: ahp.Message{Text: text}}); err != nil {
		t.Fatal(err)
	}
	for {
		for _, turn := range state.Turns {
			if turn.Message.Text == text {
				return turn
			}
		}
		select {
		case a, ok := <-actions:
			if !ok {
				t.Fatal("the session's chat ended")
			}
			state = ahp.ApplyChat(state, a)
		case <-ctx.Done():
			t.Fatalf("timed out waiting for the back turn of %q", text)
		}
	}
}

func TestBackChatShowsReasoningAndTheAgentsToolCallsWithTheirStatus(t *testing.T) {
	t.Parallel()
	host, err := local.New(local.Config{Harnesses: map[string]wake.Harness{"fake": newHarness(t, nil)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { host.Close() })
	uri, err := host.Start(testCtx(t), wake.Spec{Provider: "fake", Dir: t.TempDir(), Owner: "user:soft"})
	if err != nil {
		t.Fatal(err)
	}
	turn := backTurn(t, host, uri, "m1", "say hello")
	var reasoning string
	var call *ahp.ToolCallState
	for _, p := range turn.ResponseParts {
		if p.Reasoning != nil {
			reasoning += p.Reasoning.Content
		}
		if p.ToolCall != nil {
			call = p.ToolCall
		}
	}
	if reasoning != "thinking" {
		t.Errorf("reasoning = %q, want thinking", reasoning)
	}
	if call == nil || call.ToolName != "agent_read" || call.Status != ahp.ToolCallStatusCompleted {
		t.Errorf("the agent's tool call = %+v, want agent_read completed", call)
	}
	if got := markdown(turn); len(got) != 1 || got[0] != "hello" {
		t.Errorf("reply = %q", got)
	}
}

func TestDefaultKeyContinuesTheAgentSessionOfABackSessionStartedAgain(t *testing.T) {
	t.Parallel()
	store := filesessions.Store{Dir: filepath.Join(t.TempDir(), "ids")}
	dir := t.TempDir()
	meta := map[string]any{wake.BackSessionMeta: map[string]any{"bot": "motion", "person": "user:soft", "name": "work"}}
	session := func(host *local.Host) string {
		t.Helper()
		uri, err := host.Start(testCtx(t), wake.Spec{Provider: "fake", Dir: dir, Owner: "user:soft", Meta: meta})
		if err != nil {
			t.Fatal(err)
		}
		return uri
	}
	newHost := func() *local.Host {
		h := newHarness(t, func(c *Config) { c.Store = store })
		host, err := local.New(local.Config{Harnesses: map[string]wake.Harness{"fake": h}})
		if err != nil {
			t.Fatal(err)
		}
		return host
	}
	first := newHost()
	uri := session(first)
	said := markdown(backTurn(t, first, uri, "m1", "session"))
	first.Close()
	if len(said) != 1 || !strings.HasSuffix(said[0], "loaded=false") {
		t.Fatalf("first session said %q", said)
	}
	id := strings.TrimSuffix(said[0], " loaded=false")

	second := newHost()
	defer second.Close()
	uri2 := session(second)
	if uri2 == uri {
		t.Fatal("the restarted session has the same URI; the test proves nothing")
	}
	if got := markdown(backTurn(t, second, uri2, "m2", "session")); len(got) != 1 || got[0] != id+" loaded=true" {
		t.Errorf("after a restart: %q, want %q", got, id+" loaded=true")
	}
}
