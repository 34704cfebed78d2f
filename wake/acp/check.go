package acp

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"strings"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agenthost/bots/wake"
)

// exitWait bounds how long a check waits for a child whose connection
// closed to be reaped, so that it can say how the child ended.
const exitWait = time.Second

// Result is what Check found of one agent.
type Result struct {
	// Provider names the agent.
	Provider string
	// Ready is true when the agent started, signed in and opened a
	// session.
	Ready bool
	// Problem says in one sentence what is missing and what fixes it; ""
	// when Ready.
	Problem string
	// Took is how long the check ran.
	Took time.Duration
}

// String is the check's line: "<provider>: ready" or "<provider>: not
// ready: <problem>".
func (r Result) String() string {
	if r.Ready {
		return r.Provider + ": ready"
	}
	return r.Provider + ": not ready: " + r.Problem
}

// Check starts cfg's agent once, as a back session would (its command,
// environment, and a temporary HOME holding a copy of the login in
// Config.Home), in a new temporary folder; runs
// initialize, signs in and opens a session with session/new, all within
// Config.StartTimeout; then kills it and removes the folder. It keeps no
// session record. The Result says whether the agent is ready, or what is
// missing and what fixes it.
func Check(ctx context.Context, cfg Config) Result {
	began := time.Now()
	r := Result{Provider: cfg.Provider}
	done := func(problem string) Result {
		r.Ready, r.Problem, r.Took = problem == "", problem, time.Since(began)
		return r
	}
	a, closeAgent, err := scratch(cfg, "check")
	if err != nil {
		return done(strings.TrimPrefix(err.Error(), "acp: "))
	}
	defer closeAgent()
	return done(a.check(ctx))
}

// scratch returns an agent of cfg in a new temporary folder, for a check
// or a login, keeping no record; closeAgent closes it and removes the
// folder.
func scratch(cfg Config, purpose string) (a *agent, closeAgent func(), err error) {
	cfg.Store = &MemStore{}
	cfg.Telemetry = nil // a check or a login is not a back session's
	h, err := New(cfg)
	if err != nil {
		return nil, nil, err
	}
	dir, err := os.MkdirTemp("", "acp-"+purpose+"-")
	if err != nil {
		return nil, nil, fmt.Errorf("acp: a folder to run the agent in: %w", err)
	}
	a, err = newAgent(h, wake.SessionInfo{URI: "acp-" + purpose + ":" + cfg.Provider, Provider: cfg.Provider, Dir: dir})
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	return a, func() { a.Close(); os.RemoveAll(dir) }, nil
}

// adopt starts a child of a that Close kills; an error says in a sentence
// why it did not start.
func (a *agent) adopt() (*child, error) {
	c, err := a.spawn()
	if err != nil {
		return nil, errors.New(spawnProblem(a.h.cfg.Agent.Command, err))
	}
	a.mu.Lock()
	a.child = c
	a.mu.Unlock()
	return c, nil
}

// check runs the check's steps on a new child of a and returns the
// problem, or "".
func (a *agent) check(parent context.Context) string {
	cfg := a.h.cfg
	c, err := a.adopt()
	if err != nil {
		return err.Error()
	}
	ctx, cancel := context.WithTimeout(parent, cfg.StartTimeout)
	defer cancel()
	began := time.Now()
	step := "initialize"
	problem := func(err error) string {
		switch {
		case errors.Is(err, ErrNotSignedIn):
			return err.Error()
		case parent.Err() != nil:
			return "the check was stopped before the agent answered " + step
		case ctx.Err() != nil:
			return fmt.Sprintf("the agent did not answer %s within %s", step, cfg.StartTimeout)
		case c.waitExit():
			return fmt.Sprintf("the agent ended during %s: %s", step, c.how(exitWait))
		}
		return fmt.Sprintf("the agent failed %s: %s", step, rpcMessage(err))
	}
	init, err := c.conn.Initialize(ctx, initializeRequest())
	if err != nil {
		return problem(err)
	}
	a.log.Debug("acp: check: initialized", "after", time.Since(began), "offered", offered(init.AuthMethods))
	step = "authenticate"
	if err := a.signIn(ctx, c, init.AuthMethods); err != nil {
		return problem(err)
	}
	step = "session/new"
	resp, err := c.conn.NewSession(ctx, sdk.NewSessionRequest{Cwd: a.dir.dir, McpServers: a.toolServers(init.AgentCapabilities)})
	if err != nil {
		return problem(a.explainAuth(step, err, init.AuthMethods))
	}
	a.log.Debug("acp: check: opened a session", "id", resp.SessionId, "after", time.Since(began))
	return ""
}

// waitExit reports whether the child has exited, waiting a moment for it
// to be reaped: a request to a child that is exiting may fail (its pipe
// closed) before its exit is seen.
func (c *child) waitExit() bool {
	t := time.NewTimer(exitWait)
	defer t.Stop()
	select {
	case <-c.exited:
		return true
	case <-t.C:
		return !c.alive()
	}
}

// spawnProblem says why the agent's command did not start.
func spawnProblem(command string, err error) string {
	switch {
	case errors.Is(err, exec.ErrNotFound):
		return fmt.Sprintf("command %s not found on PATH; install it, or give its full path in the agents file's command", command)
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Sprintf("command %s not found", command)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Sprintf("command %s may not be run (permission denied)", command)
	}
	return fmt.Sprintf("command %s did not start: %v", command, err)
}
