package wake_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/record"
	"github.com/agenthost/bots/wake"
	"github.com/agenthost/bots/wake/internal/maintest"
	"github.com/agenthost/bots/wake/local"
	"github.com/agenthost/bots/wake/memrows"
)

const leaked = "tok-wake-9f8e7d6c5b4a3210"

// replaceScrubber replaces one value, as connector.Scrubber does.
type replaceScrubber struct{ value string }

func (s replaceScrubber) String(in string) string {
	return strings.ReplaceAll(in, s.value, "[redacted]")
}
func (s replaceScrubber) Longest() int { return len(s.value) }

// leakyAgent hands the value out every way an agent can: a reply streamed
// in pieces that split it, reasoning, a tool report, a question, an
// approval, post_message, and the turn's error.
type leakyAgent struct{}

func (leakyAgent) Open(context.Context, wake.SessionInfo) (wake.Agent, error) {
	return leakyAgent{}, nil
}
func (leakyAgent) Close() error { return nil }

func (leakyAgent) Turn(ctx context.Context, w wake.Work) error {
	half := len(leaked) / 2
	w.Reply("the key is " + leaked[:half])
	w.Reply(leaked[half:] + " and again ")
	w.Reply(leaked[:3])
	w.Reply(leaked[3:])
	if r, ok := w.(wake.Reasoner); ok {
		r.Reason("thinking about " + leaked)
	}
	if r, ok := w.(wake.ToolReporter); ok {
		r.ReportTool(wake.ToolReport{ID: "t1", Title: "read " + leaked, Status: wake.ToolCompleted, Input: `{"k":"` + leaked + `"}`, Output: leaked, Started: true})
	}
	in, _ := json.Marshal(map[string]string{"text": "posted " + leaked})
	if _, err := w.CallTool(ctx, wake.PostMessage, in); err != nil {
		return err
	}
	if _, _, err := w.Ask(ctx, []ahp.ChatInputQuestion{{ID: "q", Kind: ahp.QuestionText, Message: "is " + leaked + " yours?"}}); err != nil {
		return err
	}
	return errors.New("the agent failed holding " + leaked)
}

// TestNothingAnAgentHandsOutCarriesASecret: whatever way an agent hands a
// value the scrubber knows out of its back session, neither the main chat
// nor the back chat (its state and every action followers and subscribers
// see) holds it.
func TestNothingAnAgentHandsOutCarriesASecret(t *testing.T) {
	t.Parallel()
	scrub := replaceScrubber{leaked}
	h, err := local.New(local.Config{Harnesses: map[string]wake.Harness{"leaky": leakyAgent{}}, Scrub: scrub})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	w, err := wake.New(wake.Config{Host: h, Rows: &memrows.Rows{}, DefaultAgent: "leaky"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "AGENTS.md"), []byte("be brief\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m := maintest.New("turn-1", "hello")
	turn := w.Wake(wake.Message{
		Bot: record.Record{ID: "motion", Name: "Motion", Workspace: dir, Owner: "user:soft"}, Person: "user:soft",
		Session: "ahp-session:/main", Chat: "ahp-chat://main", TurnID: "turn-1", Text: "hello", StartedAt: time.Now(),
	}, m)

	var (
		mu   sync.Mutex
		back []ahp.Action
	)
	st, _ := m.Wait(t, "the question", func(c ahp.ChatState, _ ahp.SessionState) bool {
		if turn.Session() == "" {
			return false
		}
		for _, p := range c.ActiveTurn.ResponseParts {
			if p.InputRequest != nil {
				return true
			}
		}
		return false
	})
	_, ch, err := h.Follow(ctx(t), turn.Session())
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for a := range ch {
			mu.Lock()
			back = append(back, a)
			mu.Unlock()
		}
	}()
	var qid string
	for _, p := range st.ActiveTurn.ResponseParts {
		if p.InputRequest != nil {
			qid = p.InputRequest.Request.ID
		}
	}
	answer := ahp.InputCompleted(qid, ahp.InputDecline, nil)
	m.Apply(answer)
	if err := turn.Answer(ctx(t), answer); err != nil {
		t.Fatal(err)
	}
	ended := m.Ended(t)
	if ended.State != ahp.TurnStateError {
		t.Fatalf("the main turn ended %s", ended.State)
	}
	backState, _, err := h.Follow(ctx(t), turn.Session())
	if err != nil {
		t.Fatal(err)
	}

	mainLog := maintest.JSON(m.Log()) + maintest.JSON(m.Current())
	mu.Lock()
	backLog := maintest.JSON(back) + maintest.JSON(backState)
	mu.Unlock()
	for name, s := range map[string]string{"the main chat": mainLog, "the back chat": backLog} {
		if strings.Contains(s, leaked) {
			t.Errorf("%s holds the value: %s", name, s)
		}
		for _, piece := range []string{leaked[:len(leaked)/2], leaked[len(leaked)/2:]} {
			if strings.Contains(s, piece) {
				t.Errorf("%s holds a piece of the value, %q", name, piece)
			}
		}
	}
	if !strings.Contains(mainLog, "posted [redacted]") || !strings.Contains(mainLog, "is [redacted] yours?") || !strings.Contains(mainLog, "the agent failed holding [redacted]") {
		t.Errorf("the main chat does not show what was said, scrubbed: %s", mainLog)
	}
	if !strings.Contains(backLog, "the key is [redacted] and again [redacted]") {
		t.Errorf("the back chat's reply is not the streamed text, scrubbed: %s", backLog)
	}
}

// TestWakerScrubsTheMainChatOfAnyHost: with a host that scrubs nothing
// (an embedder's own), Config.Scrub still keeps the value out of the main
// chat: post_message's text, the relayed question, the turn's error.
func TestWakerScrubsTheMainChatOfAnyHost(t *testing.T) {
	t.Parallel()
	h, err := local.New(local.Config{Harnesses: map[string]wake.Harness{"leaky": leakyAgent{}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	w, err := wake.New(wake.Config{Host: h, Rows: &memrows.Rows{}, DefaultAgent: "leaky", Scrub: replaceScrubber{leaked}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	m := maintest.New("turn-1", "hello")
	turn := w.Wake(wake.Message{
		Bot: record.Record{ID: "motion", Name: "Motion", Workspace: t.TempDir(), Owner: "user:soft"}, Person: "user:soft",
		Session: "ahp-session:/main", Chat: "ahp-chat://main", TurnID: "turn-1", Text: "hello", StartedAt: time.Now(),
	}, m)
	st, _ := m.Wait(t, "the question", func(c ahp.ChatState, _ ahp.SessionState) bool {
		for _, p := range c.ActiveTurn.ResponseParts {
			if p.InputRequest != nil {
				return true
			}
		}
		return false
	})
	for _, p := range st.ActiveTurn.ResponseParts {
		if p.InputRequest != nil {
			answer := ahp.InputCompleted(p.InputRequest.Request.ID, ahp.InputDecline, nil)
			m.Apply(answer)
			if err := turn.Answer(ctx(t), answer); err != nil {
				t.Fatal(err)
			}
		}
	}
	m.Ended(t)
	mainLog := maintest.JSON(m.Log()) + maintest.JSON(m.Current())
	if strings.Contains(mainLog, leaked) || !strings.Contains(mainLog, "posted [redacted]") || !strings.Contains(mainLog, "holding [redacted]") {
		t.Errorf("the main chat: %s", mainLog)
	}
}
