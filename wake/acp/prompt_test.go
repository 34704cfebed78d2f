package acp

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/agenthost/bots/wake"
	"github.com/agenthost/bots/wake/acp/acpfake"
)

// toolNames are the words of a text that look like tool names.
var toolNames = regexp.MustCompile(`\b[a-z]+(?:_[a-z]+)+\b`)

func TestSystemPromptNamesExactlyTheToolsOffered(t *testing.T) {
	t.Parallel()
	h := newHarness(t, nil)
	ag, err := h.Open(testCtx(t), wake.SessionInfo{URI: "ahp-session:/p", Provider: "fake", Dir: t.TempDir(), SystemPrompt: wake.SystemPrompt})
	if err != nil {
		t.Fatal(err)
	}
	a := ag.(*agent)
	t.Cleanup(func() { a.Close() })
	prompt := mustTurn(t, a, "prompt").replied()
	offered := strings.Split(mustTurn(t, a, "tools").replied(), ",")
	named := toolNames.FindAllString(prompt, -1)
	slices.Sort(named)
	named = slices.Compact(named)
	if !slices.Equal(named, offered) {
		t.Errorf("the system prompt names %q; the tools offered are %q\nprompt: %s", named, offered, prompt)
	}
}

func TestClaudeCodeGetsTheSystemPromptInMetaNotInTheMessage(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(c *Config) {
		c.Agent.Env = append(c.Agent.Env, acpfake.NameEnv)
		environ := c.Environ
		c.Environ = func() []string { return append(environ(), acpfake.NameEnv+"=@zed-industries/claude-code-acp") }
	})
	ag, err := h.Open(testCtx(t), wake.SessionInfo{URI: "ahp-session:/c", Provider: "fake", Dir: t.TempDir(), SystemPrompt: "SYSTEM"})
	if err != nil {
		t.Fatal(err)
	}
	a := ag.(*agent)
	t.Cleanup(func() { a.Close() })
	if got := mustTurn(t, a, "prompt").replied(); got != "prompt" {
		t.Errorf("the first message reads %q; want it alone, the system prompt given out of band", got)
	}
	if got, want := mustTurn(t, a, "system").replied(), "system: SYSTEM "+QuestionPrompt; got != want {
		t.Errorf("the agent was given %q in _meta, want %q", got, want)
	}
}
