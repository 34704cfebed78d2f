package acp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/wake"
	"github.com/agenthost/bots/wake/acp/sandbox"
	"github.com/agenthost/bots/wake/agents"
	"github.com/agenthost/bots/wake/agents/filesessions"
)

// Agents are ACP agents as a Set a host runs (bots.Server.Agents): each
// Config as it was read (ReadAgents) or written, which an Env completes
// with what only the host knows.
type Agents []Config

var _ agents.Set = Agents(nil)

// Providers names the agents in their order.
func (a Agents) Providers() []string {
	names := make([]string, len(a))
	for i, cfg := range a {
		names[i] = cfg.Provider
	}
	return names
}

// Configs returns the agents as their harnesses run them under env: with
// its connectors, logger, telemetry and sandbox bounds (its Protect after
// each agent's own, its RefuseConnect besides each agent's own), a login
// hint of env.LoginCommand where an agent names none, and env.Sessions'
// store in place of a store in files or none. It changes nothing of a.
func (a Agents) Configs(env agents.Env) []Config {
	out := make([]Config, len(a))
	for i, cfg := range a {
		cfg.Connectors = env.Connectors
		if cfg.LoginHint == "" && env.LoginCommand != "" {
			cfg.LoginHint = env.LoginCommand + cfg.Provider
		}
		cfg.Logger = env.Logger
		cfg.Telemetry = env.Telemetry
		cfg.AllowUnsandboxed = env.AllowUnsandboxed
		cfg.Protect = append(slices.Clone(cfg.Protect), env.Protect...)
		cfg.RefuseConnect = refuseBoth(env.RefuseConnect, cfg.RefuseConnect)
		if _, files := cfg.Store.(filesessions.Store); env.Sessions != nil && (cfg.Store == nil || files) {
			cfg.Store = env.Sessions(cfg.Provider)
		}
		out[i] = cfg
	}
	return out
}

// refuseBoth answers the ports host refuses and those own refuses; nil
// when neither is set.
func refuseBoth(host, own func() []uint16) func() []uint16 {
	switch {
	case host == nil:
		return own
	case own == nil:
		return host
	}
	return func() []uint16 { return slices.Concat(host(), own()) }
}

// Harnesses returns the harness of each agent as env runs it (starting
// none), and each one's entry in a root state's agents. Where the
// kernel offers no sandbox it refuses, unless env.AllowUnsandboxed, which
// it then logs at Warn, as it does when the kernel offers one anyway.
func (a Agents) Harnesses(env agents.Env) (map[string]wake.Harness, []ahp.AgentInfo, error) {
	if len(a) == 0 {
		return nil, nil, nil
	}
	log := env.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := checkSandbox(env.AllowUnsandboxed, sandbox.Available, log); err != nil {
		return nil, nil, err
	}
	hs := make(map[string]wake.Harness, len(a))
	infos := make([]ahp.AgentInfo, 0, len(a))
	for _, cfg := range a.Configs(env) {
		if _, ok := hs[cfg.Provider]; ok {
			return nil, nil, fmt.Errorf("acp: agent %q is named twice", cfg.Provider)
		}
		h, err := New(cfg)
		if err != nil {
			return nil, nil, err
		}
		hs[cfg.Provider] = h
		infos = append(infos, h.Info())
	}
	return hs, infos, nil
}

// checkSandbox refuses to start agents where available says the kernel
// offers no sandbox, unless allowUnsandboxed; with allowUnsandboxed it
// warns at every start.
func checkSandbox(allowUnsandboxed bool, available func() (int, error), log *slog.Logger) error {
	abi, err := available()
	if allowUnsandboxed {
		if err != nil {
			log.Warn("AgentsUnsandboxed (-agents-unsandboxed): agents run without a sandbox and can read everything this server can", "why", err)
		} else {
			log.Warn("AgentsUnsandboxed (-agents-unsandboxed) is set, but the kernel offers a sandbox: agents run inside it", "landlock_abi", abi)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("refusing to start agents other than echo without a sandbox (%w); set AgentsUnsandboxed (-agents-unsandboxed) to run them unconfined", err)
	}
	return nil
}

// Check checks every agent at once (see checkOne), as env runs them,
// and calls each with every Result as its check ends, one call at a time.
// It returns when every check has ended.
func (a Agents) Check(ctx context.Context, env agents.Env, each func(agents.Result)) {
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, cfg := range a.Configs(env) {
		wg.Go(func() {
			r := checkOne(ctx, cfg)
			mu.Lock()
			defer mu.Unlock()
			each(r)
		})
	}
	wg.Wait()
}

// Login runs the login of the agent provider names (see logIn), then
// prints where the login is kept and the agent's check to term.Out.
func (a Agents) Login(ctx context.Context, env agents.Env, provider string, term agents.Terminal) error {
	cfgs := a.Configs(env)
	i := slices.IndexFunc(cfgs, func(c Config) bool { return c.Provider == provider })
	if i < 0 {
		return errors.New("acp: no agent is named " + provider)
	}
	if err := logIn(ctx, cfgs[i], term); err != nil {
		return err
	}
	fmt.Fprintf(term.Out, "%s: logged in; the login is kept in %s\n", provider, cfgs[i].Home)
	fmt.Fprintln(term.Out, checkOne(ctx, cfgs[i]))
	return nil
}
