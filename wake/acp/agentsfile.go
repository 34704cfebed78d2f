package acp

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/agenthost/bots/internal/jsonerr"
	"github.com/agenthost/bots/wake/agents/filesessions"
)

// agentsFile is an agents file, as ReadAgents reads it.
type agentsFile struct {
	Agents map[string]agentEntry `json:"agents"`
}

// agentEntry is one agent of the agents file: how it starts, and its
// limits.
type agentEntry struct {
	Command
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
func (l agentLimits) apply(cfg *Config) error {
	for _, f := range []struct {
		name, value string
		to          *time.Duration
	}{
		{StartTimeoutField, l.StartTimeout, &cfg.StartTimeout},
		{TurnIdleField, l.TurnIdle, &cfg.TurnIdle},
		{TurnTimeoutField, l.TurnTimeout, &cfg.TurnTimeout},
	} {
		d, err := ParseLimit(f.name, f.value)
		if err != nil {
			return err
		}
		*f.to = d
	}
	return nil
}

// ReadAgents reads the agents file at path and returns one Config per
// agent, sorted by provider name; an empty path names none. The file is
// JSON:
//
//	{"agents": {"codex": {"command": "codex-acp", "args": [],
//	  "env": ["PATH", "OPENAI_API_KEY"], "auth": "openai-api-key",
//	  "login": {"command": "codex", "args": ["login"]},
//	  "startTimeout": "60s", "turnIdle": "2m", "turnTimeout": "30m",
//	  "models": ["gpt-5"], "read": ["/opt/sdk"]}}}
//
// Each entry is a Command (see its fields) with the agent's limits as Go
// durations (StartTimeoutField, TurnIdleField, TurnTimeoutField; "" is the
// default). An unknown field, a name that cannot be a folder's, or a bad
// limit is refused, naming the file, the agent and the field.
//
// Each agent keeps what it needs under dir/agents/<name>: its login
// (home, Config.Home), each bot's own HOME (bots/<bot>/<created>,
// Config.BotHomes) and its session records (sessions). What the file
// cannot say, the host's agents.Env gives (see Agents.Configs): the
// connectors, the logger, the sandbox's bounds and the login hint.
func ReadAgents(path, dir string) (Agents, error) {
	if path == "" {
		return nil, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("agents file: %w", err)
	}
	if dir, err = filepath.Abs(dir); err != nil { // the agents start in the bots' folders
		return nil, fmt.Errorf("agents file %s: the configuration folder: %w", path, err)
	}
	var f agentsFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("agents file %s: %w", path, jsonerr.Locate(data, err))
	}
	names := make([]string, 0, len(f.Agents))
	for name := range f.Agents {
		names = append(names, name)
	}
	sort.Strings(names)
	cfgs := make([]Config, 0, len(names))
	for _, name := range names {
		if name == "" || strings.ContainsAny(name, `/\ `) || name == "." || name == ".." {
			return nil, fmt.Errorf("agents file %s: %q cannot name an agent", path, name)
		}
		home := filepath.Join(dir, "agents", name)
		cfg := Config{
			Provider: name,
			Agent:    f.Agents[name].Command,
			Home:     filepath.Join(home, "home"),
			BotHomes: filepath.Join(home, "bots"),
			Store:    filesessions.Store{Dir: filepath.Join(home, "sessions")},
		}
		if err := f.Agents[name].apply(&cfg); err != nil {
			return nil, fmt.Errorf("agents file %s: agent %q: %w", path, name, err)
		}
		cfgs = append(cfgs, cfg)
	}
	return cfgs, nil
}
