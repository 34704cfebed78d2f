package bots

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/agenthost/bots/wake/agents"
	"github.com/agenthost/bots/wake/echo"
)

// CheckAgents checks every one of Agents at once, as a back session would
// run it (sandboxed, with its HOME), and prints one line per agent to out
// ("<name>: ready", or what is missing and what fixes it); it is an error
// when any is not ready. It needs no Start.
func (s *Server) CheckAgents(ctx context.Context, out io.Writer) error {
	s.init()
	names, err := s.providers()
	if err != nil {
		return err
	}
	if len(names) == 0 {
		fmt.Fprintln(out, "no agents are configured: back sessions run on echo, which needs no check")
		return nil
	}
	results := map[string]agents.Result{}
	s.Agents.Check(ctx, s.agentsEnv(nil, nil), func(r agents.Result) { results[r.Provider] = r })
	bad := 0
	for _, name := range names {
		r := results[name]
		fmt.Fprintln(out, r)
		if !r.Ready {
			bad++
		}
	}
	if bad > 0 {
		return fmt.Errorf("%d of %d agents are not ready", bad, len(names))
	}
	return nil
}

// LoginAgent runs the login of the agent named name on term, as the
// person at it and outside the sandbox, with the HOME the login is kept
// in, which every back session's own HOME copies it from, then prints
// where the login is kept and the agent's check to term.Out (see
// agents.Set's Login). It needs no Start.
func (s *Server) LoginAgent(ctx context.Context, name string, term agents.Terminal) error {
	s.init()
	names, err := s.providers()
	if err != nil {
		return err
	}
	if !slices.Contains(names, name) {
		if _, ok := s.Harnesses[name]; ok || name == echo.Provider {
			return fmt.Errorf("%s needs no login: it is no ACP agent", name)
		}
		if len(names) == 0 {
			return fmt.Errorf("no ACP agent is named %q: this server has none (Server.Agents, read from an agents file by acp.ReadAgents, is empty)", name)
		}
		return fmt.Errorf("no ACP agent is named %q (the agents are %s)", name, strings.Join(names, ", "))
	}
	return s.Agents.Login(ctx, s.agentsEnv(nil, nil), name, term)
}
