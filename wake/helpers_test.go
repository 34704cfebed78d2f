package wake_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/record"
	"github.com/agenthost/bots/wake"
	"github.com/agenthost/bots/wake/echo"
	"github.com/agenthost/bots/wake/internal/maintest"
	"github.com/agenthost/bots/wake/local"
	"github.com/agenthost/bots/wake/memrows"
)

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
func (e *env) say(text string) (*maintest.Main, *wake.Turn, wake.Message) {
	e.turns++
	turnID := "turn-" + strings.Repeat("a", e.turns)
	m := maintest.New(turnID, text)
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
