package acp

import (
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/internal/waittest"
	"github.com/agenthost/bots/wake"
	"github.com/agenthost/bots/wake/acp/acpfake"
	"github.com/agenthost/bots/wake/local"
)

// subagentText is the text content of the main turn's subagent call.
func subagentText(c ahp.ChatState) []string {
	var out []string
	if c.ActiveTurn == nil {
		return nil
	}
	for _, p := range c.ActiveTurn.ResponseParts {
		if tc := p.ToolCall; tc != nil && tc.ToolName == wake.SubagentTool {
			for _, ct := range tc.Content {
				if ct.Type == ahp.ContentText {
					out = append(out, ct.Text)
				}
			}
		}
	}
	return out
}

// turnError is the message of a failed turn's error part.
func turnError(turn ahp.Turn) string {
	for _, p := range turn.ResponseParts {
		if p.Error != nil {
			return p.Error.Error.Message
		}
	}
	return ""
}

func TestMainTurnShowsTheStartAndAMessageWaitingOnAFailedStartIsToldAtOnce(t *testing.T) {
	t.Parallel()
	logs := &waittest.Log{}
	e := newWakeEnvWith(t, func(c *Config) {
		withFakeEnv(acpfake.HangInitEnv, "1")(c)
		c.StartTimeout = time.Second
		c.Logger = slog.New(slog.NewTextHandler(logs, nil))
	})
	const want = "Motion's agent fake failed while starting: it did not answer initialize within 1s (the agent's startTimeout), so it was stopped. " +
		"Check that fake can reach its service and is signed in, or raise startTimeout for it in the agents file."
	m1, _ := e.say("post one")
	m1.wait(t, "the start shown in the main turn", func(c ahp.ChatState) bool {
		return slices.Contains(subagentText(c), "Starting fake…")
	})
	m2, _ := e.say("post two") // waits on the first message's start
	for i, m := range []*mainChat{m1, m2} {
		turn := m.ended(t)
		if got := turnError(turn); turn.State != ahp.TurnStateError || got != want {
			t.Errorf("message %d: the main turn ended %s with %q; want the failure %q", i+1, turn.State, got, want)
		}
	}
	if n := strings.Count(logs.String(), "acp: the agent did not start"); n != 1 {
		t.Errorf("%d starts failed; want one, the second message told of the start it waited on", n)
	}
	m3, _ := e.say("post three") // a message after the failure starts again
	m3.wait(t, "a new start", func(c ahp.ChatState) bool { return slices.Contains(subagentText(c), "Starting fake…") })
	if turn := m3.ended(t); turn.State != ahp.TurnStateError || turnError(turn) != want {
		t.Errorf("a later message ended %s with %q", turn.State, turnError(turn))
	}
}

func TestAnAgentThatCannotReachItsAPIIsShownInTheTurnBeforeTheIdleLimit(t *testing.T) {
	t.Parallel()
	// The note shows while the turn runs, and is taken back when the idle
	// limit ends it: a limit of 8s leaves a loaded machine time to see it.
	e := newWakeEnvWith(t, func(c *Config) { c.TurnIdle = 8 * time.Second })
	const note = "fake says it cannot reach api.anthropic.com and keeps trying; the turn stops after 8s without a word from it (its turnIdle). " +
		"Check this machine's network, or a proxy (HTTPS_PROXY in fake's env in the agents file)."
	m, _ := e.say(`stderr Retrying request (attempt 1)\nError: getaddrinfo ENOTFOUND api.anthropic.com`)
	m.wait(t, "the note in the running turn", func(c ahp.ChatState) bool { return slices.Contains(subagentText(c), note) })
	if turn := m.ended(t); turn.State != ahp.TurnStateError || !strings.Contains(turnError(turn), "it could not reach api.anthropic.com") {
		t.Errorf("the turn ended %s with %q; want the idle limit's failure", turn.State, turnError(turn))
	}
}

func TestClaudeCodeThatCannotReachItsAPIIsShownFromItsDebugLog(t *testing.T) {
	t.Parallel()
	e := newWakeEnvWith(t, func(c *Config) {
		c.TurnIdle = 8 * time.Second
		c.Agent.Env = append(c.Agent.Env, acpfake.NameEnv)
		environ := c.Environ
		c.Environ = func() []string { return append(environ(), acpfake.NameEnv+"=@zed-industries/claude-code-acp") }
	})
	m, _ := e.say(`debuglog API error (attempt 1/11): getaddrinfo ENOTFOUND api.anthropic.com`)
	m.wait(t, "the note in the running turn", func(c ahp.ChatState) bool {
		return slices.ContainsFunc(subagentText(c), func(s string) bool { return strings.Contains(s, "cannot reach api.anthropic.com") })
	})
}

func TestAnAgentThatGetsThroughAfterAllTakesTheUnreachableNoteBack(t *testing.T) {
	t.Parallel()
	e := newWakeEnvWith(t, func(c *Config) { c.TurnIdle = 3 * time.Second })
	m, _ := e.say(`stderr Error: getaddrinfo ENOTFOUND api.anthropic.com then tick`)
	note := func(s string) bool { return strings.Contains(s, "cannot reach") }
	// The agent's ticks may take the note back before a look at the chat
	// sees it: the chat's history of what it showed says it was there.
	m.wait(t, "the note shown, then taken back while the agent speaks", func(c ahp.ChatState) bool {
		return slices.ContainsFunc(m.texts(), note) && c.ActiveTurn != nil && !slices.ContainsFunc(subagentText(c), note)
	})
}

func TestMainTurnFailsSayingTheIdleLimitStoppedTheAgent(t *testing.T) {
	t.Parallel()
	e := newWakeEnvWith(t, func(c *Config) { c.TurnIdle = 300 * time.Millisecond })
	m, _ := e.say("silent")
	turn := m.ended(t)
	const want = "Motion's agent fake failed during the turn: it sent nothing for 300ms (the agent's turnIdle), so the turn was stopped. " +
		"If fake cannot reach its model's API it retries in silence: check this machine's network, or a proxy (pass HTTPS_PROXY in fake's env in the agents file). Then send the message again, or raise turnIdle for fake in the agents file if it needs longer."
	if got := turnError(turn); turn.State != ahp.TurnStateError || got != want {
		t.Errorf("the main turn ended %s with %q; want %q", turn.State, got, want)
	}
	m, _ = e.say("post after")
	if got := markdown(m.ended(t)); !slices.Equal(got, []string{"after"}) {
		t.Errorf("the next message: %q", got)
	}
}

func TestMessagesWaitingBehindAFailedRestartFailWithItAtOnce(t *testing.T) {
	t.Parallel()
	logs := &waittest.Log{}
	var hang atomic.Bool
	h := newHarness(t, func(c *Config) {
		c.Agent.Env = append(c.Agent.Env, acpfake.HangInitEnv)
		environ := c.Environ
		c.Environ = func() []string {
			if hang.Load() { // every child after the first hangs in initialize
				return append(environ(), acpfake.HangInitEnv+"=1")
			}
			return environ()
		}
		// The first child must answer within it on a loaded CI machine,
		// under -race: 500ms was missed there once.
		c.StartTimeout = 3 * time.Second
		c.Logger = slog.New(slog.NewTextHandler(logs, nil))
	})
	host, err := local.New(local.Config{Harnesses: map[string]wake.Harness{"fake": h}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { host.Close() })
	info := backInfo(t)
	session, err := host.Start(testCtx(t), wake.Spec{Provider: "fake", Dir: info.Dir, Title: info.Title, Owner: "user:soft", Meta: info.Meta})
	if err != nil {
		t.Fatal(err)
	}
	hang.Store(true)
	if turn := backTurn(t, host, session, "m1", "crash"); turn.State != ahp.TurnStateError {
		t.Fatalf("the crash ended %s", turn.State)
	}
	ctx := testCtx(t)
	state, actions, err := host.Follow(ctx, session)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"m2", "m3", "m4"} { // m2 restarts the agent; m3 and m4 wait behind it
		if err := host.Send(ctx, session, wake.Pending{Kind: ahp.PendingQueued, ID: id, Message: ahp.Message{Text: "say " + id}}); err != nil {
			t.Fatal(err)
		}
	}
	const want = "Motion's agent fake failed while starting: it did not answer initialize within 3s (the agent's startTimeout), so it was stopped. " +
		"Check that fake can reach its service and is signed in, or raise startTimeout for it in the agents file."
	failed := map[string]string{}
	for len(failed) < 3 {
		select {
		case a := <-actions:
			state = ahp.ApplyChat(state, a)
		case <-ctx.Done():
			t.Fatalf("the waiting messages did not all fail: %v", failed)
		}
		for _, turn := range state.Turns {
			if turn.State == ahp.TurnStateError && turn.Message.Text != "crash" {
				failed[turn.Message.Text] = turnError(turn)
			}
		}
	}
	for text, got := range failed {
		if got != want {
			t.Errorf("%q failed with %q, want %q", text, got, want)
		}
	}
	if n := strings.Count(logs.String(), "acp: the agent did not start"); n != 1 {
		t.Errorf("%d starts failed; want one, the messages behind it told at once", n)
	}
}
