package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/wake/acp/acpfake"
)

// failedWith starts a turn in chat and returns the error the main turn
// failed with, failing the test when it did not fail.
func failedWith(t *testing.T, c *ahpClient, chat, id, words string) string {
	t.Helper()
	c.dispatch(chat, ahp.TurnStarted(id, time.Now(), ahp.UserMessage(words)))
	turn := c.turn(chat, id)
	for _, p := range turn.ResponseParts {
		if p.Error != nil && turn.State == ahp.TurnStateError {
			return p.Error.Error.Message
		}
	}
	b, _ := json.Marshal(turn)
	t.Fatalf("%q: the main turn ended %s, want it failed: %s", words, turn.State, b)
	return ""
}

func TestEndToEndAgentFailuresAreOneSentenceInTheChatAndAWarnInTheLog(t *testing.T) {
	t.Setenv(acpfake.NewFailEnv, "The model is overloaded")
	setup := newACPSetup(t)
	fake := func(env ...string) map[string]any {
		return map[string]any{"command": os.Args[0], "args": []string{"-test.run=^$"}, "env": append([]string{acpfake.Env}, env...)}
	}
	quick := fake()
	quick["turnIdle"] = "1s"
	agents, err := json.Marshal(map[string]any{"agents": map[string]any{"fake": quick, "locked": fake(acpfake.NewFailEnv)}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(setup.agents, agents, 0o600); err != nil {
		t.Fatal(err)
	}
	srv := setup.start(t)
	c := dialChat(t, srv.addr, "limits")
	c.makeBot("vault", `{"name": "Vault", "provider": "locked"}`)
	c.makeBot("motion", `{"name": "Motion", "provider": "fake"}`)

	chat := c.openChat("ahp-session:/locked", "vault")
	// The sentence, with the agent's own words and no JSON.
	const answered = "Vault's agent locked failed while opening the session: The model is overloaded."
	if got := failedWith(t, c, chat, "t1", "post hello"); !strings.HasPrefix(got, answered) || strings.Contains(got, "{") {
		t.Errorf("the chat shows %q, want %q", got, answered)
	}
	chat = c.openChat("ahp-session:/idle", "motion")
	const idle = "Motion's agent fake failed during the turn: it sent nothing for 1s (the agent's turnIdle), so the turn was stopped. " +
		"If fake cannot reach its model's API it retries in silence: check this machine's network, or a proxy (pass HTTPS_PROXY in fake's env in the agents file). Then send the message again, or raise turnIdle for fake in the agents file if it needs longer."
	if got := failedWith(t, c, chat, "t2", "silent"); got != idle {
		t.Errorf("the chat shows %q, want %q", got, idle)
	}
	if got := say(t, c, chat, "t3", "post awake"); len(got) != 1 || got[0] != "awake" {
		t.Errorf("the next message says %q", got)
	}
	srv.stop(t)
	logs := string(setup.logs.Bytes())
	var warned bool
	for _, line := range strings.Split(logs, "\n") {
		if strings.Contains(line, `level=WARN msg="acp: the agent did not start"`) && strings.Contains(line, "agent=locked") &&
			strings.Contains(line, "bot=Vault") && strings.Contains(line, `step="opening the session"`) && strings.Contains(line, `cause="The model is overloaded"`) {
			warned = true
		}
	}
	if !warned {
		t.Errorf("no Warn line names the bot, the agent, the step and the cause of the start failure:\n%s", logs)
	}
}
