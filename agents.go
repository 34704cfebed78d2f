package bots

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"

	"github.com/agenthost/bots/wake/acp"
	"github.com/agenthost/bots/wake/echo"
)

// CheckAgents checks every one of Agents at once, as a back session would
// run it (sandboxed, with its HOME), and prints one line per agent to out
// ("<name>: ready", or what is missing and what fixes it); it is an error
// when any is not ready. It needs no Start.
func (s *Server) CheckAgents(ctx context.Context, out io.Writer) error {
	s.init()
	cfgs, err := s.agentConfigs(nil, nil)
	if err != nil {
		return err
	}
	if len(cfgs) == 0 {
		fmt.Fprintln(out, "no agents are configured: back sessions run on echo, which needs no check")
		return nil
	}
	bad := 0
	for _, r := range acp.CheckAll(ctx, cfgs) {
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

// LoginAgent runs the login of the ACP agent named name on term, as the
// person at it and outside the sandbox, with the HOME the login is kept
// in, which every back session's own HOME copies it from (see acp.Login
// and acp.Config.Home), then prints where the login is kept and the
// agent's check to term.Out. It needs no Start.
func (s *Server) LoginAgent(ctx context.Context, name string, term acp.Terminal) error {
	s.init()
	cfgs, err := s.agentConfigs(nil, nil)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(cfgs, func(c acp.Config) bool { return c.Provider == name })
	if i < 0 {
		if _, ok := s.Harnesses[name]; ok || name == echo.Provider {
			return fmt.Errorf("%s needs no login: it is no ACP agent", name)
		}
		if len(cfgs) == 0 {
			return fmt.Errorf("no ACP agent is named %q: this server has none (Server.Agents, read from an agents file by acp.ReadAgents, is empty)", name)
		}
		names := make([]string, 0, len(cfgs))
		for _, c := range cfgs {
			names = append(names, c.Provider)
		}
		return fmt.Errorf("no ACP agent is named %q (the agents are %s)", name, strings.Join(names, ", "))
	}
	if err := acp.Login(ctx, cfgs[i], term); err != nil {
		return err
	}
	fmt.Fprintf(term.Out, "%s: logged in; the login is kept in %s\n", name, cfgs[i].Home)
	fmt.Fprintln(term.Out, acp.Check(ctx, cfgs[i]))
	return nil
}

// checkSandbox refuses to start agents (other than echo and the
// Harnesses, which run in the process) where available says the kernel
// offers no sandbox, unless allowUnsandboxed; with allowUnsandboxed it
// warns at every start.
func checkSandbox(agents int, allowUnsandboxed bool, available func() (int, error), log *slog.Logger) error {
	abi, err := available()
	if allowUnsandboxed {
		if err != nil {
			log.Warn("AgentsUnsandboxed (-agents-unsandboxed): agents run without a sandbox and can read everything this server can", "why", err)
		} else {
			log.Warn("AgentsUnsandboxed (-agents-unsandboxed) is set, but the kernel offers a sandbox: agents run inside it", "landlock_abi", abi)
		}
		return nil
	}
	if agents > 0 && err != nil {
		return fmt.Errorf("refusing to start agents other than echo without a sandbox (%v); set AgentsUnsandboxed (-agents-unsandboxed) to run them unconfined", err)
	}
	return nil
}
