// Package maintest is a main chat for the tests of the wake and of its
// session hosts: it applies what a wake emits with the reducers, as the
// bot-chat provider does, and waits for what a test expects of it.
package maintest

import (
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/bots/ahp"
)

// Main is a main chat whose turn turnID a person started (wake.Main).
type Main struct {
	mu      sync.Mutex
	chat    ahp.ChatState
	session ahp.SessionState
	log     []ahp.Action
	changed chan struct{}
}

// New returns a main chat whose turn turnID is running with text.
func New(turnID, text string) *Main {
	m := &Main{changed: make(chan struct{}, 1)}
	m.chat = ahp.ChatState{ChatSummary: ahp.ChatSummary{Resource: "ahp-chat://main", Status: ahp.StatusIdle}}
	m.chat = ahp.ApplyChat(m.chat, ahp.TurnStarted(turnID, time.Now(), ahp.UserMessage(text)))
	m.session = ahp.SessionState{SessionMetadata: ahp.SessionMetadata{Status: ahp.StatusIdle}}
	return m
}

// Chat applies a to the chat while its turn runs, and reports whether it
// did.
func (m *Main) Chat(a ahp.Action) bool {
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

// Session applies a to the chat's session.
func (m *Main) Session(a ahp.Action) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.session = ahp.ApplySession(m.session, a)
	m.signal()
}

func (m *Main) signal() {
	select {
	case m.changed <- struct{}{}:
	default:
	}
}

// Stop applies the person's stop of the active turn, as the provider does
// before wake.Turn.Stop.
func (m *Main) Stop(t *testing.T) {
	t.Helper()
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.chat.ActiveTurn == nil {
		t.Fatal("no active main turn to stop")
	}
	m.chat = ahp.ApplyChat(m.chat, ahp.TurnCancelled(m.chat.ActiveTurn.ID, 0))
}

// Apply applies a client's action, as the provider does before
// wake.Turn.Answer.
func (m *Main) Apply(a ahp.Action) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.chat = ahp.ApplyChat(m.chat, a)
}

// Current returns the chat as it stands.
func (m *Main) Current() ahp.ChatState {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.chat
}

// Log returns the actions the wake emitted into the chat, in order.
func (m *Main) Log() []ahp.Action {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]ahp.Action(nil), m.log...)
}

// Wait waits until cond holds of the chat and its session, or fails the
// test after 5 s naming what.
func (m *Main) Wait(t *testing.T, what string, cond func(c ahp.ChatState, s ahp.SessionState) bool) (ahp.ChatState, ahp.SessionState) {
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
			t.Fatalf("timed out waiting for %s; chat: %s", what, JSON(c))
		}
	}
}

// Ended waits for the chat's turn to end and returns it.
func (m *Main) Ended(t *testing.T) ahp.Turn {
	t.Helper()
	c, _ := m.Wait(t, "the main turn to end", func(c ahp.ChatState, _ ahp.SessionState) bool { return c.ActiveTurn == nil })
	return c.Turns[len(c.Turns)-1]
}

// JSON is v as JSON, or the error encoding it, for a test's message.
func JSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return err.Error()
	}
	return string(b)
}
