package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/wake"
	"github.com/agenthost/bots/wake/acp"
	"github.com/agenthost/bots/wake/echo"
)

// agentsFile is the -agents file: the ACP agents a back session may run
// on, besides echo, by provider name.
//
//	{"agents": {"codex": {"command": "codex-acp", "args": [],
//	  "env": ["PATH", "OPENAI_API_KEY"], "auth": "openai-api-key",
//	  "login": {"command": "codex", "args": ["login"]},
//	  "startTimeout": "60s", "models": ["gpt-5"]}}}
//
// env names the variables passed through from the server's environment;
// the child gets no other variable of the server's, PATH
// /usr/local/bin:/usr/bin:/bin unless env names PATH, and HOME
// <config>/agents/<name>/home, a folder of its own (log the agent in there
// with -login, or give it its key through env). auth names the sign-in
// method the agent is authenticated with (see acp.Command.Auth); login is
// the command -login runs when the agent offers no terminal login of its
// own. "read" names more files or folders the agent may read inside its
// sandbox.
//
// startTimeout, turnIdle and turnTimeout bound the agent (Go durations such
// as "90s"; see agentLimits); startTimeout also bounds its -check-agents
// check.
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

// readAgents reads the agents file at path and returns each agent's
// harness configuration, sorted by name; an empty path has none. Each
// agent's sessions get conns's tools and run in the sandbox sb says.
func readAgents(path, configDir string, conns acp.Connectors, sb agentSandbox, log *slog.Logger) ([]acp.Config, error) {
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
	var cfgs []acp.Config
	for _, name := range names {
		if name == "" || name == echo.Provider || strings.ContainsAny(name, `/\ `) || name == "." || name == ".." {
			return nil, fmt.Errorf("agents file %s: %q cannot name an agent", path, name)
		}
		dir := filepath.Join(configDir, "agents", name)
		cfg := acp.Config{
			Provider:         name,
			Agent:            f.Agents[name].Command,
			Home:             filepath.Join(dir, "home"),
			LoginHint:        loginHint(configDir, name),
			Store:            acp.FileStore{Dir: filepath.Join(dir, "sessions")},
			Connectors:       conns,
			Logger:           log,
			AllowUnsandboxed: sb.allowUnsandboxed,
			Protect:          sb.protect,
		}
		if err := f.Agents[name].apply(&cfg); err != nil {
			return nil, fmt.Errorf("agents file %s: agent %q: %w", path, name, err)
		}
		cfgs = append(cfgs, cfg)
	}
	return cfgs, nil
}

// loginHint is the command that logs agent name in.
func loginHint(configDir, name string) string {
	if configDir == defaultConfigDir() {
		return "go run ./examples/server -login " + name
	}
	return "go run ./examples/server -config " + configDir + " -login " + name
}

// loadAgents adds a harness per agent of cfgs to harnesses and returns
// their entries for the root state.
func loadAgents(cfgs []acp.Config, harnesses map[string]wake.Harness) ([]ahp.AgentInfo, error) {
	var infos []ahp.AgentInfo
	for _, cfg := range cfgs {
		if _, ok := harnesses[cfg.Provider]; ok {
			return nil, fmt.Errorf("agents file: agent %q is named twice", cfg.Provider)
		}
		h, err := acp.New(cfg)
		if err != nil {
			return nil, fmt.Errorf("agents file: %w", err)
		}
		harnesses[cfg.Provider] = h
		infos = append(infos, h.Info())
	}
	return infos, nil
}

// checkAgents checks every agent of cfgs at once and returns their
// results in the order of cfgs.
func checkAgents(ctx context.Context, cfgs []acp.Config) []acp.Result {
	results := make([]acp.Result, len(cfgs))
	var wg sync.WaitGroup
	for i, cfg := range cfgs {
		wg.Go(func() { results[i] = acp.Check(ctx, cfg) })
	}
	wg.Wait()
	return results
}

// logChecks checks every agent of cfgs at once and logs each result as it
// comes: Info when the agent is ready, Warn with what to do otherwise.
func logChecks(ctx context.Context, cfgs []acp.Config, log *slog.Logger) {
	var wg sync.WaitGroup
	for _, cfg := range cfgs {
		wg.Go(func() {
			r := acp.Check(ctx, cfg)
			switch {
			case ctx.Err() != nil:
			case r.Ready:
				log.Info("agent ready", "agent", r.Provider, "took", r.Took.Round(time.Millisecond))
			default:
				log.Warn("agent not ready", "agent", r.Provider, "problem", r.Problem, "took", r.Took.Round(time.Millisecond))
			}
		})
	}
	wg.Wait()
}

// printChecks checks every agent of cfgs and prints one line per agent to
// out; it is an error when any is not ready.
func printChecks(ctx context.Context, cfgs []acp.Config, out io.Writer) error {
	if len(cfgs) == 0 {
		fmt.Fprintln(out, "no agents are configured (-agents FILE, or <config>/agents.json); back sessions run on echo, which needs no check")
		return nil
	}
	bad := 0
	for _, r := range checkAgents(ctx, cfgs) {
		fmt.Fprintln(out, r)
		if !r.Ready {
			bad++
		}
	}
	if bad > 0 {
		return fmt.Errorf("%d of %d agents are not ready", bad, len(cfgs))
	}
	return nil
}

// loginAgent runs the login of the agent named name, then checks it.
func loginAgent(ctx context.Context, cfgs []acp.Config, name string, term acp.Terminal) error {
	var names []string
	for _, cfg := range cfgs {
		names = append(names, cfg.Provider)
		if cfg.Provider != name {
			continue
		}
		if err := acp.Login(ctx, cfg, term); err != nil {
			return err
		}
		fmt.Fprintf(term.Out, "%s: logged in; the login is kept in %s\n", name, cfg.Home)
		fmt.Fprintln(term.Out, acp.Check(ctx, cfg))
		return nil
	}
	if name == echo.Provider {
		return errors.New("-login echo: echo needs no login")
	}
	list := "none"
	if len(names) > 0 {
		list = strings.Join(names, ", ")
	}
	return fmt.Errorf("-login %q: the agents file names no such agent (it names %s)", name, list)
}
