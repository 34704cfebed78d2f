package wake_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/record"
	"github.com/agenthost/bots/wake"
	"github.com/agenthost/bots/wake/echo"
	"github.com/agenthost/bots/wake/local"
	"github.com/agenthost/bots/wake/memrows"
)

// fakeMain is a main chat: it applies what the wake emits with the
// reducers, as the bot-chat provider does.
type fakeMain struct {
	mu      sync.Mutex
	chat    ahp.ChatState
	session ahp.SessionState
	log     []ahp.Action
	changed chan struct{}
}

func newMain(turnID, text string) *fakeMain {
	m := &fakeMain{changed: make(chan struct{}, 1)}
	m.chat = ahp.ChatState{ChatSummary: ahp.ChatSummary{Resource: "ahp-chat://main", Status: ahp.StatusIdle}}
	m.chat = ahp.ApplyChat(m.chat, ahp.TurnStarted(turnID, time.Now(), ahp.UserMessage(text)))
	m.session = ahp.SessionState{SessionMetadata: ahp.SessionMetadata{Status: ahp.StatusIdle}}
	return m
}

func (m *fakeMain) Chat(a ahp.Action) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.chat.ActiveTurn == nil {
		return false
	}
	m.chat = ahp.ApplyChat(m.chat, a)
	m.log = append(m.log, a)
	m.signal()
	return true
}

func (m *fakeMain) Session(a ahp.Action) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.session = ahp.ApplySession(m.session, a)
	m.signal()
}

func (m *fakeMain) signal() {
	select {
	case m.changed <- struct{}{}:
	default:
	}
}

// stop applies the person's stop of the active turn, as the provider does
// before Turn.Stop.
func (m *fakeMain) stop(t *testing.T) {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.chat.ActiveTurn == nil {
		t.Fatal("no active main turn to stop")
	}
	m.chat = ahp.ApplyChat(m.chat, ahp.TurnCancelled(m.chat.ActiveTurn.ID, 0))
}

// apply applies a client's action, as the provider does before Turn.Answer.
func (m *fakeMain) apply(a ahp.Action) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.chat = ahp.ApplyChat(m.chat, a)
}

// current returns the main chat as it stands.
func (m *fakeMain) current() ahp.ChatState {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.chat
}

// wait polls until cond holds of the main chat and session, or fails.
func (m *fakeMain) wait(t *testing.T, what string, cond func(c ahp.ChatState, s ahp.SessionState) bool) (ahp.ChatState, ahp.SessionState) {
	t.Helper()
	deadline := time.After(5 * time.Second)
	for {
		m.mu.Lock()
		c, s := m.chat, m.session
		m.mu.Unlock()
		if cond(c, s) {
			return c, s
		}
		select {
		case <-m.changed:
		case <-deadline:
			t.Fatalf("timed out waiting for %s; chat: %s", what, mustJSON(c))
		}
	}
}

// ended waits for the main turn to end and returns it.
func (m *fakeMain) ended(t *testing.T) ahp.Turn {
	t.Helper()
	c, _ := m.wait(t, "the main turn to end", func(c ahp.ChatState, _ ahp.SessionState) bool { return c.ActiveTurn == nil })
	return c.Turns[len(c.Turns)-1]
}

// texts are the markdown parts of a turn.
func texts(turn ahp.Turn) []string { return turn.Replies() }

func errorOf(turn ahp.Turn) *ahp.ErrorInfo { return turn.Failure() }

func subagentCall(turn ahp.Turn) *ahp.ToolCallState {
	for _, p := range turn.ResponseParts {
		if p.ToolCall != nil && p.ToolCall.ToolName == wake.SubagentTool {
			return p.ToolCall
		}
	}
	return nil
}

// env is a Waker on a local.Host running echo, and a bot in a folder.
type env struct {
	host  *local.Host
	sh    wake.SessionHost
	w     *wake.Waker
	rows  *memrows.Rows
	bot   record.Record
	dir   string
	turns int
}

type envOption func(*wake.Config)

func newEnv(t *testing.T, wrap func(*local.Host) wake.SessionHost, opts ...envOption) *env {
	t.Helper()
	h, err := local.New(local.Config{
		Harnesses: map[string]wake.Harness{echo.Provider: echo.Harness{}},
		Presets:   map[string]local.Preset{"quick": {Provider: echo.Provider, Model: "m1"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	var sh wake.SessionHost = h
	if wrap != nil {
		sh = wrap(h)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "AGENTS.md"), []byte("---\nname: Motion\n---\n## Instructions\nBe brief.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rows := &memrows.Rows{}
	cfg := wake.Config{Host: sh, Rows: rows, DefaultAgent: echo.Provider}
	for _, o := range opts {
		o(&cfg)
	}
	w, err := wake.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return &env{host: h, sh: sh, w: w, rows: rows, dir: dir,
		bot: record.Record{ID: "motion", Name: "Motion", Workspace: dir, Owner: "user:soft"}}
}

// say wakes the bot with text in a new main turn.
func (e *env) say(text string) (*fakeMain, *wake.Turn, wake.Message) {
	e.turns++
	turnID := "turn-" + strings.Repeat("a", e.turns)
	m := newMain(turnID, text)
	msg := wake.Message{
		Bot: e.bot, Person: "user:soft", Session: "ahp-session:/main", Chat: "ahp-chat://main",
		TurnID: turnID, Text: text, StartedAt: time.Now(),
	}
	return m, e.w.Wake(msg, m), msg
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(b)
}
