package main

import (
	"bytes"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agenthost/bots/wake"
	"github.com/agenthost/bots/wake/acp"
	"github.com/agenthost/bots/wake/echo"
)

// load reads the agents file at path and loads its agents besides echo.
func load(path, configDir string) (map[string]wake.Harness, []string, error) {
	cfgs, err := readAgents(path, configDir, nil, agentSandbox{}, slog.New(slog.DiscardHandler))
	if err != nil {
		return nil, nil, err
	}
	harnesses := map[string]wake.Harness{echo.Provider: echo.Harness{}}
	infos, err := loadAgents(cfgs, harnesses)
	var names []string
	for _, i := range infos {
		names = append(names, i.Provider)
	}
	return harnesses, names, err
}

func TestLoadAgents(t *testing.T) {
	dir := t.TempDir()
	write := func(body string) string {
		p := filepath.Join(dir, "agents.json")
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	harnesses, names, err := load(write(`{"agents": {"claude": {"command": "claude-code-acp", "env": ["ANTHROPIC_API_KEY"], "models": ["sonnet"]},
		"gemini": {"command": "gemini", "args": ["--acp"], "env": ["GEMINI_API_KEY"], "auth": "gemini-api-key"},
		"codex": {"command": "codex-acp", "login": {"command": "codex", "args": ["login"]}, "startTimeout": "90s"}}}`), dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != 3 || names[0] != "claude" || names[1] != "codex" || names[2] != "gemini" {
		t.Errorf("agents = %q", names)
	}
	if _, ok := harnesses["gemini"]; !ok || len(harnesses) != 4 {
		t.Errorf("harnesses = %v", harnesses)
	}
	for _, bad := range []string{
		`{"agents": {"echo": {"command": "x"}}}`,
		`{"agents": {"a/b": {"command": "x"}}}`,
		`{"agents": {"x": {}}}`,
		`{"agents": {"x": {"command": "x", "env": ["A=B"]}}}`,
		`{"agents": {"x": {"command": "x", "secret": "y"}}}`,
		`{"agents": {"x": {"command": "x", "startTimeout": "soon"}}}`,
		`{"agents": {"x": {"command": "x", "startTimeout": "-1s"}}}`,
		`not json`,
	} {
		if _, _, err := load(write(bad), dir); err == nil {
			t.Errorf("%s was taken", bad)
		}
	}
	if harnesses, names, err := load("", dir); err != nil || names != nil || len(harnesses) != 1 {
		t.Errorf("no file: %v, %v", names, err)
	}
}

func TestAgentsFileGivesEachAgentItsHomeSignInAndStartTimeout(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "agents.json")
	if err := os.WriteFile(p, []byte(`{"agents": {"codex": {"command": "codex-acp", "env": ["OPENAI_API_KEY"], "auth": "openai-api-key",
		"login": {"command": "codex", "args": ["login"]}, "startTimeout": "90s"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfgs, err := readAgents(p, dir, nil, agentSandbox{}, nil)
	if err != nil || len(cfgs) != 1 {
		t.Fatalf("%v, %v", cfgs, err)
	}
	c := cfgs[0]
	if c.Home != filepath.Join(dir, "agents", "codex", "home") || c.Agent.Auth != "openai-api-key" || c.Agent.Login == nil ||
		c.Agent.Login.Command != "codex" || c.StartTimeout != 90*time.Second {
		t.Errorf("config %+v", c)
	}
	if want := "go run ./examples/server -config " + dir + " -login codex"; c.LoginHint != want {
		t.Errorf("login hint %q, want %q", c.LoginHint, want)
	}
}

func TestCheckAgentsWithoutAgentsSaysEchoNeedsNone(t *testing.T) {
	var out bytes.Buffer
	if err := printChecks(t.Context(), nil, &out); err != nil || !strings.Contains(out.String(), "no agents are configured") {
		t.Errorf("printed %q, %v", out.String(), err)
	}
}

func TestLoginOfAnUnknownAgentNamesTheKnownOnes(t *testing.T) {
	cfgs := []acp.Config{{Provider: "claude"}, {Provider: "codex"}}
	term := acp.Terminal{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard}
	if err := loginAgent(t.Context(), cfgs, "gemini", term); err == nil || !strings.Contains(err.Error(), `-login "gemini": the agents file names no such agent (it names claude, codex)`) {
		t.Errorf("error %v", err)
	}
	if err := loginAgent(t.Context(), nil, "echo", term); err == nil || !strings.Contains(err.Error(), "echo needs no login") {
		t.Errorf("error %v", err)
	}
}

func TestAgentsFileLimitsAreReadAndBadOnesRefusedNamingTheAgentAndField(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "agents.json")
	load := func(body string) (map[string]wake.Harness, error) {
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		hs, _, err := load(p, dir)
		return hs, err
	}
	hs, err := load(`{"agents": {"claude": {"command": "claude-code-acp", "startTimeout": "90s", "turnIdle": "3m", "turnTimeout": "1h"},
		"gemini": {"command": "gemini"}}}`)
	if err != nil {
		t.Fatal(err)
	}
	want := acp.Limits{StartTimeout: 90 * time.Second, TurnIdle: 3 * time.Minute, TurnTimeout: time.Hour}
	if got := hs["claude"].(*acp.Harness).Limits(); got != want {
		t.Errorf("claude's limits = %+v, want %+v", got, want)
	}
	want = acp.Limits{StartTimeout: acp.DefaultStartTimeout, TurnIdle: acp.DefaultTurnIdle, TurnTimeout: acp.DefaultTurnTimeout}
	if got := hs["gemini"].(*acp.Harness).Limits(); got != want {
		t.Errorf("gemini's limits = %+v, want the defaults %+v", got, want)
	}
	for field, value := range map[string]string{"startTimeout": "90", "turnIdle": "-1s", "turnTimeout": "soon"} {
		_, err := load(`{"agents": {"claude": {"command": "c", "` + field + `": "` + value + `"}}}`)
		if err == nil {
			t.Errorf("%s %q was taken", field, value)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, `agent "claude"`) || !strings.Contains(msg, field+` "`+value+`"`) {
			t.Errorf("%s %q is refused with %q; want it to name the agent and the field", field, value, msg)
		}
	}
}

func TestAgentsCheckedAndServedGetTheSandboxOfBackSessions(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "agents.json")
	if err := os.WriteFile(p, []byte(`{"agents": {"codex": {"command": "codex-acp"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	sb := agentSandbox{protect: protected(dir, "/srv/bots", "", "")}
	cfgs, err := readAgents(p, dir, nil, sb, nil)
	if err != nil || len(cfgs) != 1 {
		t.Fatalf("%v, %v", cfgs, err)
	}
	if c := cfgs[0]; c.AllowUnsandboxed || len(c.Protect) != 2 || c.Protect[0] != dir || c.Protect[1] != "/srv/bots" {
		t.Errorf("the agent's sandbox: unsandboxed %v, protected %v; want sandboxed, protecting the config folder and root", c.AllowUnsandboxed, c.Protect)
	}
}
