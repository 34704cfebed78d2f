package main

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/agenthost/bots/wake"
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
