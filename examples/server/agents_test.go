package main

import (
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

func TestLoadAgents(t *testing.T) {
	dir := t.TempDir()
	write := func(body string) string {
		p := filepath.Join(dir, "agents.json")
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	log := slog.New(slog.DiscardHandler)
	harnesses := map[string]wake.Harness{echo.Provider: echo.Harness{}}
	infos, err := loadAgents(write(`{"agents": {"claude": {"command": "claude-code-acp", "env": ["ANTHROPIC_API_KEY"], "models": ["sonnet"]},
		"gemini": {"command": "gemini", "args": ["--experimental-acp"]}}}`), dir, harnesses, nil, agentSandbox{}, log)
	if err != nil {
		t.Fatal(err)
	}
	if len(infos) != 2 || infos[0].Provider != "claude" || len(infos[0].Models) != 1 || infos[1].Provider != "gemini" {
		t.Errorf("infos = %+v", infos)
	}
	if _, ok := harnesses["gemini"]; !ok || len(harnesses) != 3 {
		t.Errorf("harnesses = %v", harnesses)
	}
	for _, bad := range []string{
		`{"agents": {"echo": {"command": "x"}}}`,
		`{"agents": {"a/b": {"command": "x"}}}`,
		`{"agents": {"x": {}}}`,
		`{"agents": {"x": {"command": "x", "env": ["A=B"]}}}`,
		`{"agents": {"x": {"command": "x", "secret": "y"}}}`,
		`not json`,
	} {
		if _, err := loadAgents(write(bad), dir, map[string]wake.Harness{echo.Provider: echo.Harness{}}, nil, agentSandbox{}, log); err == nil {
			t.Errorf("%s was taken", bad)
		}
	}
	if infos, err := loadAgents("", dir, harnesses, nil, agentSandbox{}, log); err != nil || infos != nil {
		t.Errorf("no file: %v, %v", infos, err)
	}
}

func TestAgentsFileLimitsAreReadAndBadOnesRefusedNamingTheAgentAndField(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "agents.json")
	load := func(body string) (map[string]wake.Harness, error) {
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		hs := map[string]wake.Harness{}
		_, err := loadAgents(p, dir, hs, nil, agentSandbox{}, slog.New(slog.DiscardHandler))
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
