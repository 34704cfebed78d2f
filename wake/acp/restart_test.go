package acp

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/wake"
	"github.com/agenthost/bots/wake/acp/acpfake"
	"github.com/agenthost/bots/wake/agents"
	"github.com/agenthost/bots/wake/agents/filesessions"
	"github.com/agenthost/bots/wake/agents/memsessions"
	"github.com/agenthost/bots/wake/filerows"
	"github.com/agenthost/bots/wake/local"
)

// startSteps are the steps a start of the fake shows in the main turn.
var startSteps = []string{"Starting fake…", "Opening a session on fake…"}

// showsSteps reports whether shown holds steps in order.
func showsSteps(shown, steps []string) bool {
	i := 0
	for _, s := range shown {
		if i < len(steps) && s == steps[i] {
			i++
		}
	}
	return i == len(steps)
}

// notices are the texts of a turn's system notifications.
func notices(turn ahp.Turn) []string {
	var out []string
	for _, p := range turn.ResponseParts {
		if p.SystemNotification != nil {
			out = append(out, p.SystemNotification.Content.Text)
		}
	}
	return out
}

// linkOnly reports whether the ended turn's subagent call shows the back
// session's link and no text: the start's steps were cleared.
func linkOnly(turn ahp.Turn) bool {
	for _, p := range turn.ResponseParts {
		if tc := p.ToolCall; tc != nil && tc.ToolName == wake.SubagentTool {
			return len(tc.Content) == 1 && tc.Content[0].Type == ahp.ContentSubagent
		}
	}
	return false
}

func TestARestartOfTheAgentAfterItsProcessEndedShowsItsStartInTheMainTurn(t *testing.T) {
	t.Parallel()
	e := newWakeEnv(t)
	m, _ := e.say("post one")
	if turn := m.ended(t); turn.State != ahp.TurnStateComplete || !showsSteps(m.texts(), startSteps) {
		t.Fatalf("the first start ended %s showing %q", turn.State, m.texts())
	}
	if m, _ = e.say("crash"); m.ended(t).State != ahp.TurnStateError {
		t.Fatal("the crash did not fail the turn")
	}
	m, _ = e.say("post two")
	turn := m.ended(t)
	if got := markdown(turn); !slices.Equal(got, []string{"two"}) {
		t.Fatalf("the message after the crash answered %q (%s)", got, turn.State)
	}
	if got := m.texts(); !showsSteps(got, startSteps) {
		t.Errorf("the main turn that restarted the agent showed %q; want the steps %q, as a first start shows them", got, startSteps)
	}
	if !linkOnly(turn) {
		t.Errorf("once the agent is back the subagent call still shows the start: %+v", turn.ResponseParts)
	}
}

func TestARestartOfTheServerShowsTheAgentsStartInTheMainTurn(t *testing.T) {
	t.Parallel()
	config, dir := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "AGENTS.md"), []byte("---\nname: Motion\n---\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	store := filesessions.Store{Dir: filepath.Join(config, "ids")}
	server := func() *wakeEnv {
		h := newHarness(t, func(c *Config) { c.Store = store })
		host, err := local.New(local.Config{Harnesses: map[string]wake.Harness{"fake": h}, ConfigDir: config})
		if err != nil {
			t.Fatal(err)
		}
		w, err := wake.New(wake.Config{Host: host, Rows: filerows.New(config), DefaultAgent: "fake"})
		if err != nil {
			t.Fatal(err)
		}
		e := newWakeEnvOn(w, dir)
		e.close = func() { w.Close(); host.Close() }
		t.Cleanup(e.close)
		return e
	}
	first := server()
	m, _ := first.say("post one")
	if turn := m.ended(t); turn.State != ahp.TurnStateComplete {
		t.Fatalf("the first message ended %s", turn.State)
	}
	first.close()

	second := server()
	second.turns = first.turns
	m, _ = second.say("session")
	turn := m.ended(t)
	if turn.State != ahp.TurnStateComplete {
		t.Fatalf("the message after the restart ended %s", turn.State)
	}
	if got := m.texts(); !showsSteps(got, startSteps) {
		t.Errorf("the first message after a restart showed %q; want the steps %q", got, startSteps)
	}
	if !linkOnly(turn) {
		t.Errorf("once the agent is back the subagent call still shows the start: %+v", turn.ResponseParts)
	}
}

func TestAnAgentThatCannotContinueItsSessionSaysSoInTheChatAndTheRecordSaysWhyInWords(t *testing.T) {
	t.Parallel()
	const said = "No previous sessions found for this project"
	store := &savedKeys{}
	e := newWakeEnvWith(t, all(withFakeEnv(acpfake.LoadFailEnv, said), func(c *Config) { c.Store = store }))
	m, _ := e.say("post one")
	if turn := m.ended(t); len(notices(turn)) != 0 {
		t.Fatalf("a first start told %q", notices(turn))
	}
	if m, _ = e.say("crash"); m.ended(t).State != ahp.TurnStateError {
		t.Fatal("the crash did not fail the turn")
	}
	m, _ = e.say("post two")
	turn := m.ended(t)
	const want = `fake could not continue the earlier session (it answered "No previous sessions found for this project"); this one starts afresh.`
	if got := notices(turn); !slices.Equal(got, []string{want}) || !slices.Equal(markdown(turn), []string{"two"}) {
		t.Errorf("the main turn told %q and answered %q; want the notice %q and the answer", got, markdown(turn), want)
	}
	keys := store.saved()
	if len(keys) != 1 {
		t.Fatalf("records of %d sessions, want 1", len(keys))
	}
	if rec, _, _ := store.Load(t.Context(), keys[0]); !rec.Fresh || rec.Reason != agents.ReasonLoadFailed+said {
		t.Errorf("the record is %+v; want fresh, with the reason %q", rec, agents.ReasonLoadFailed+said)
	}
}

// savedKeys is a store in memory that tells the keys it saved records of.
type savedKeys struct {
	memsessions.Store
	mu   sync.Mutex
	keys map[string]bool
}

func (s *savedKeys) Save(ctx context.Context, key string, r agents.SessionRecord) error {
	s.mu.Lock()
	if s.keys == nil {
		s.keys = map[string]bool{}
	}
	s.keys[key] = true
	s.mu.Unlock()
	return s.Store.Save(ctx, key, r)
}

// saved are the keys saved, sorted.
func (s *savedKeys) saved() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Sorted(maps.Keys(s.keys))
}
