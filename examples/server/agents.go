package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/wake"
	"github.com/agenthost/bots/wake/acp"
	"github.com/agenthost/bots/wake/echo"
)

// agentsFile is the -agents file: the ACP agents a back session may run
// on, besides echo, by provider name.
//
//	{"agents": {"claude": {"command": "claude-code-acp", "args": [],
//	  "env": ["ANTHROPIC_API_KEY"], "models": ["claude-sonnet-5"]}}}
//
// env names the variables passed through from the server's environment;
// the child gets no other variable of the server's, PATH
// /usr/local/bin:/usr/bin:/bin unless env names PATH, and HOME
// <config>/agents/<name>/home, a folder of its own (log the agent in there,
// or give it its key through env). "read" names more files or folders the
// agent may read inside its sandbox.
//
// startTimeout, turnIdle and turnTimeout bound the agent (Go durations such
// as "90s"; see agentLimits).
type agentsFile struct {
	Agents map[string]agentEntry `json:"agents"`
}

// agentEntry is one agent of the agents file: how it starts, and its
// limits.
type agentEntry struct {
	acp.Command
	agentLimits
}

// agentLimits are an agent's limits in the agents file, as Go durations
// ("90s", "2m"); "" is the default.
type agentLimits struct {
	// StartTimeout bounds initialize to a session ready (default 60s).
	StartTimeout string `json:"startTimeout,omitempty"`
	// TurnIdle is the longest a turn may go with no word from the agent
	// before it is stopped and fails, saying so (default 2m).
	TurnIdle string `json:"turnIdle,omitempty"`
	// TurnTimeout is the longest a turn may run (default 30m).
	TurnTimeout string `json:"turnTimeout,omitempty"`
}

// apply parses the limits into cfg.
func (l agentLimits) apply(cfg *acp.Config) error {
	for _, f := range []struct {
		name, value string
		to          *time.Duration
	}{
		{acp.StartTimeoutField, l.StartTimeout, &cfg.StartTimeout},
		{acp.TurnIdleField, l.TurnIdle, &cfg.TurnIdle},
		{acp.TurnTimeoutField, l.TurnTimeout, &cfg.TurnTimeout},
	} {
		d, err := acp.ParseLimit(f.name, f.value)
		if err != nil {
			return err
		}
		*f.to = d
	}
	return nil
}

// loadAgents reads the agents file at path and adds a harness per agent to
// harnesses; it returns their entries for the root state, sorted by name.
// Each agent's sessions get conns's tools; an empty path adds none.
func loadAgents(path, configDir string, harnesses map[string]wake.Harness, conns acp.Connectors, sb agentSandbox, log *slog.Logger) ([]ahp.AgentInfo, error) {
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("agents file: %w", err)
	}
	var f agentsFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("agents file %s: %w", path, err)
	}
	names := make([]string, 0, len(f.Agents))
	for name := range f.Agents {
		names = append(names, name)
	}
	sort.Strings(names)
	var infos []ahp.AgentInfo
	for _, name := range names {
		if name == "" || name == echo.Provider || strings.ContainsAny(name, `/\ `) || name == "." || name == ".." {
			return nil, fmt.Errorf("agents file %s: %q cannot name an agent", path, name)
		}
		if _, ok := harnesses[name]; ok {
			return nil, fmt.Errorf("agents file %s: agent %q is named twice", path, name)
		}
		dir := filepath.Join(configDir, "agents", name)
		cfg := acp.Config{
			Provider:         name,
			Agent:            f.Agents[name].Command,
			Home:             filepath.Join(dir, "home"),
			Store:            acp.FileStore{Dir: filepath.Join(dir, "sessions")},
			Connectors:       conns,
			Logger:           log,
			AllowUnsandboxed: sb.allowUnsandboxed,
			Protect:          sb.protect,
		}
		if err := f.Agents[name].apply(&cfg); err != nil {
			return nil, fmt.Errorf("agents file %s: agent %q: %w", path, name, err)
		}
		h, err := acp.New(cfg)
		if err != nil {
			return nil, fmt.Errorf("agents file %s: %w", path, err)
		}
		harnesses[name] = h
		infos = append(infos, h.Info())
	}
	return infos, nil
}
