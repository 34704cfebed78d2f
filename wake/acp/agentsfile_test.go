package acp_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/bots/wake/acp"
	"github.com/agenthost/bots/wake/agents/filesessions"
)

// writeAgents writes an agents file holding body in dir.
func writeAgents(t *testing.T, dir, body string) string {
	t.Helper()
	p := filepath.Join(dir, "agents.json")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestReadAgentsSortsByNameAndRefusesBadEntries(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfgs, err := acp.ReadAgents(writeAgents(t, dir, `{"agents": {"gemini": {"command": "gemini", "args": ["--acp"]},
		"claude": {"command": "claude-code-acp", "env": ["ANTHROPIC_API_KEY"], "models": ["sonnet"]},
		"codex": {"command": "codex-acp"}}}`), dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range cfgs {
		names = append(names, c.Provider)
		if _, err := acp.New(c); err != nil {
			t.Errorf("agent %s does not make a harness: %v", c.Provider, err)
		}
	}
	if strings.Join(names, " ") != "claude codex gemini" {
		t.Errorf("agents %q, want claude codex gemini", names)
	}
	for _, bad := range []string{
		`{"agents": {"a/b": {"command": "x"}}}`,
		`{"agents": {"..": {"command": "x"}}}`,
		`{"agents": {"x": {"command": "x", "secret": "y"}}}`,
		`{"agents": {"x": {"command": "x", "startTimeout": "soon"}}}`,
		`not json`,
	} {
		if cfgs, err := acp.ReadAgents(writeAgents(t, dir, bad), dir); err == nil {
			t.Errorf("%s was taken: %+v", bad, cfgs)
		}
	}
	if cfgs, err := acp.ReadAgents("", dir); err != nil || len(cfgs) != 0 {
		t.Errorf("no file: %v, %v", cfgs, err)
	}
	if _, err := acp.ReadAgents(filepath.Join(dir, "none.json"), dir); err == nil {
		t.Error("a missing file was taken")
	}
}

func TestReadAgentsSaysOnWhichLineAndColumnTheFileIsWrong(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for body, want := range map[string]string{
		"{\"agents\": {\n  \"claude\": {\n    \"comand\": \"claude-code-acp\"\n  }\n}}": `line 3, column 5: unknown field "comand"`,
		"{\"agents\": {\n  \"claude\": {\"command\": \"claude-code-acp\",}\n}}":         "line 2, column 43: invalid character '}'",
		"{\"agents\": {\"claude\": {\"args\": \"--acp\"}}}":                             "line 1, column 38: cannot unmarshal string",
	} {
		path := writeAgents(t, dir, body)
		if _, err := acp.ReadAgents(path, dir); err == nil || !strings.Contains(err.Error(), "agents file "+path+": "+want) {
			t.Errorf("%s: %v, want it to say %q", body, err, want)
		}
	}
}

func TestReadAgentsGivesEachAgentItsHomeSessionsSignInAndLimits(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfgs, err := acp.ReadAgents(writeAgents(t, dir, `{"agents": {"codex": {"command": "codex-acp", "env": ["OPENAI_API_KEY"],
		"auth": "openai-api-key", "login": {"command": "codex", "args": ["login"]},
		"startTimeout": "90s", "turnIdle": "3m", "turnTimeout": "1h"}}}`), dir)
	if err != nil || len(cfgs) != 1 {
		t.Fatalf("%v, %v", cfgs, err)
	}
	c := cfgs[0]
	if c.Home != filepath.Join(dir, "agents", "codex", "home") || c.Agent.Auth != "openai-api-key" || c.Agent.Login == nil || c.Agent.Login.Command != "codex" {
		t.Errorf("config %+v", c)
	}
	if s, ok := c.Store.(filesessions.Store); !ok || s.Dir != filepath.Join(dir, "agents", "codex", "sessions") {
		t.Errorf("session records kept in %#v", c.Store)
	}
	if c.StartTimeout != 90*time.Second || c.TurnIdle != 3*time.Minute || c.TurnTimeout != time.Hour {
		t.Errorf("limits %v %v %v", c.StartTimeout, c.TurnIdle, c.TurnTimeout)
	}
}

func TestReadAgentsRefusesABadLimitNamingTheAgentAndField(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for field, value := range map[string]string{"startTimeout": "90", "turnIdle": "-1s", "turnTimeout": "soon"} {
		_, err := acp.ReadAgents(writeAgents(t, dir, `{"agents": {"claude": {"command": "c", "`+field+`": "`+value+`"}}}`), dir)
		if err == nil {
			t.Errorf("%s %q was taken", field, value)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, `agent "claude"`) || !strings.Contains(msg, field+` "`+value+`"`) {
			t.Errorf("%s %q is refused with %q; want it to name the agent and the field", field, value, msg)
		}
	}
}

// TestReadAgentsTakesARelativeConfigurationFolderFromWhereTheServerRuns:
// the agents start in the bots' folders, so a relative -config would put
// their HOMEs there: each folder an agent keeps comes out absolute.
func TestReadAgentsTakesARelativeConfigurationFolderFromWhereTheServerRuns(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	rel, err := filepath.Rel(wd, dir)
	if err != nil || filepath.IsAbs(rel) {
		t.Fatalf("no relative path to %s from %s: %q, %v", dir, wd, rel, err)
	}
	cfgs, err := acp.ReadAgents(writeAgents(t, dir, `{"agents": {"codex": {"command": "codex-acp"}}}`), rel)
	if err != nil || len(cfgs) != 1 {
		t.Fatalf("%v, %v", cfgs, err)
	}
	c := cfgs[0]
	if c.Home != filepath.Join(dir, "agents", "codex", "home") || c.BotHomes != filepath.Join(dir, "agents", "codex", "bots") {
		t.Errorf("HOME folders %s and %s, want them under %s", c.Home, c.BotHomes, dir)
	}
	if s, ok := c.Store.(filesessions.Store); !ok || s.Dir != filepath.Join(dir, "agents", "codex", "sessions") {
		t.Errorf("session records kept in %#v", c.Store)
	}
}
