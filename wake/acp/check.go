package acp

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agenthost/bots/wake"
	"github.com/agenthost/bots/wake/agents"
	"github.com/agenthost/bots/wake/agents/memsessions"
)

// exitWait bounds how long a check waits for a child whose connection
// closed to be reaped, so that it can say how the child ended.
const exitWait = time.Second

// checkOne starts cfg's agent once, as a back session would (its command,
// environment, and a temporary HOME holding a copy of the login in
// Config.Home), in a new temporary folder; runs
// initialize, signs in and opens a session with session/new, all within
// Config.StartTimeout; then kills it and removes the folder. It keeps no
// session record. The Result says whether the agent is ready, or what is
// missing and what fixes it.
func checkOne(ctx context.Context, cfg Config) agents.Result {
	began := time.Now()
	r := agents.Result{Provider: cfg.Provider}
	done := func(problem, via string) agents.Result {
		r.Ready, r.Problem, r.Took = problem == "", problem, time.Since(began)
		if r.Ready {
			r.Via = via
		}
		return r
	}
	a, closeAgent, err := scratch(cfg, "check")
	if err != nil {
		return done(strings.TrimPrefix(err.Error(), "acp: "), "")
	}
	defer closeAgent()
	return done(a.check(ctx))
}

// scratch returns an agent of cfg in a new temporary folder, for a check
// or a login, keeping no record; closeAgent closes it and removes the
// folder.
func scratch(cfg Config, purpose string) (a *agent, closeAgent func(), err error) {
	cfg.Store = &memsessions.Store{}
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
// problem, or "" and what the agent was signed in with.
func (a *agent) check(parent context.Context) (problem, via string) {
	cfg := a.h.cfg
	c, err := a.adopt()
	if err != nil {
		return err.Error(), ""
	}
	ctx, cancel := context.WithTimeout(parent, cfg.StartTimeout)
	defer cancel()
	began := time.Now()
	step := "initialize"
	failed := func(err error) string {
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
		return failed(err), ""
	}
	a.log.Debug("acp: check: initialized", "after", time.Since(began), "offered", offered(init.AuthMethods))
	step = "authenticate"
	if problem := unattended(cfg, init.AuthMethods); problem != "" {
		return problem, ""
	}
	if err := a.signIn(ctx, c, init.AuthMethods); err != nil {
		return failed(err), ""
	}
	step = "session/new"
	resp, err := c.conn.NewSession(ctx, sdk.NewSessionRequest{Cwd: a.dir.dir, McpServers: a.toolServers(init.AgentCapabilities)})
	if err != nil {
		return failed(a.explainAuth(step, err, init.AuthMethods)), ""
	}
	a.log.Debug("acp: check: opened a session", "id", resp.SessionId, "after", time.Since(began))
	return signedInWith(cfg, init.AuthMethods)
}

// signedInWith says what an agent that opened a session was signed in
// with: the key of the method chooseAuth picked, a key variable the
// server passes it, or the login kept in its HOME. An agent that used
// none while the agents file passes it a key variable the server does not
// set is not signed in: it opens sessions without its API (no network
// here, say) and would fail at the first prompt.
func signedInWith(cfg Config, methods []sdk.AuthMethod) (problem, via string) {
	k := keysOf(cfg)
	if id, err := chooseAuth(cfg, methods); err == nil && id != "" {
		for _, m := range methods {
			if m.EnvVar != nil && m.EnvVar.Id == id {
				return "", "the key in " + and(names(m.EnvVar.Vars))
			}
		}
		return "", "the sign-in method " + id
	}
	var set []string
	for n := range k.set {
		set = append(set, n)
	}
	set = keyNames(set)
	slices.Sort(set)
	if len(set) > 0 {
		return "", "the key in " + and(set)
	}
	if files := loginFiles(cfg.Home); len(files) > 0 {
		if len(files) > 3 {
			files = append(files[:3], "…")
		}
		return "", fmt.Sprintf("the login kept in %s (%s)", cfg.Home, strings.Join(files, ", "))
	}
	if unset := keyNames(k.unset()); len(unset) > 0 {
		return keyUnset(cfg, unset), ""
	}
	return "", ""
}

// unattended is why a check does not call the sign-in method the agents
// file's auth names, "" when it may: a method the agent carries out
// itself (Codex's "chatgpt", Gemini CLI's "oauth-personal") signs in in a
// browser nobody watches during a check, and waits for it until the
// start times out, unless a login is kept in its HOME or a key is passed.
func unattended(cfg Config, methods []sdk.AuthMethod) string {
	id := cfg.Agent.Auth
	i := slices.IndexFunc(methods, func(m sdk.AuthMethod) bool { return methodID(m) == id })
	if id == "" || i < 0 || methods[i].Agent == nil || len(loginFiles(cfg.Home)) > 0 {
		return ""
	}
	k := keysOf(cfg)
	for n := range k.set {
		if keyName(n) {
			return ""
		}
	}
	if unset := keyNames(k.unset()); len(unset) > 0 {
		// a method that reads a key the server does not set (Gemini's
		// gemini-api-key): say which
		return keyUnset(cfg, unset)
	}
	how := "its own login (-login)"
	if cfg.LoginHint != "" {
		how = cfg.LoginHint
	}
	return fmt.Sprintf("the agent is not signed in: the agents file's auth names %s, which signs in through the agent itself (in a browser, for an account) that nobody watches during a check, and its login HOME (%s) holds no login; log it in once with %s, or pass it a key", id, cfg.Home, how)
}

// keyNames are the names of names that say they hold a credential.
func keyNames(names []string) []string {
	var out []string
	for _, n := range names {
		if keyName(n) {
			out = append(out, n)
		}
	}
	return out
}

// keyUnset says that an agent is not signed in: the agents file passes it
// the key variables unset, which the server does not set, and its login
// HOME holds no login.
func keyUnset(cfg Config, unset []string) string {
	how := "log it in with its own login (-login)"
	if cfg.LoginHint != "" {
		how = "log it in with " + cfg.LoginHint
	}
	return fmt.Sprintf("the agent is not signed in: %s %s named in the agents file's env but not set in the server's environment, and its login HOME (%s) holds no login; set %s, or %s",
		and(unset), isAre(unset), cfg.Home, them(unset), how)
}

// keyName reports whether a variable's name says it holds a credential.
func keyName(n string) bool {
	n = strings.ToUpper(n)
	return strings.HasSuffix(n, "_KEY") || strings.HasSuffix(n, "_TOKEN") || strings.HasSuffix(n, "_SECRET")
}

// loginFiles are the files of a login HOME, by slash path, sorted,
// outside what sessions keep: what a login left there.
func loginFiles(home string) []string {
	if home == "" {
		return nil
	}
	var out []string
	for p := range homeState(home) {
		out = append(out, filepath.ToSlash(p))
	}
	slices.Sort(out)
	return out
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
		return fmt.Sprintf("command %s not found; install it there, or give where it is in the agents file's command", command)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Sprintf("command %s may not be run (permission denied)", command)
	}
	return fmt.Sprintf("command %s did not start: %v", command, err)
}
