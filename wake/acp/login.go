package acp

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/agenthost/bots/wake/agents"
)

// logIn runs the agent's own login interactively on term, with HOME
// Config.Home, so that the login lands where every session's HOME copies
// it from (see Config.Home): Command.Login when the agent names one, else
// the terminal login the agent offers in initialize's authMethods (the
// one Command.Auth names, or the first), found by starting the agent
// once. The login runs
// in Config.Home with the agent's environment (Command.Env, PATH, HOME)
// and the variables the method adds, after a line on term.Err saying what
// runs; it returns when the login exits, an error when it exits with a
// status other than zero or leaves nothing in the HOME (a login cut
// short). The login is given TERM and the locale too, for the screen it
// draws.
func logIn(ctx context.Context, cfg Config, term agents.Terminal) error {
	if cfg.Home == "" {
		return errors.New("acp: a login needs the agent's HOME")
	}
	if _, err := New(cfg); err != nil {
		return err
	}
	if err := os.MkdirAll(cfg.Home, 0o700); err != nil {
		return fmt.Errorf("acp: the agent's home: %w", err)
	}
	command, args, extra := "", []string(nil), map[string]any(nil)
	if l := cfg.Agent.Login; l != nil && l.Command != "" {
		command, args = l.Command, l.Args
	} else {
		methods, err := authMethods(ctx, cfg)
		if err != nil {
			return err
		}
		var ok bool
		if command, args, extra, ok = pickLogin(cfg.Agent, methods); !ok {
			return fmt.Errorf("acp: agent %s offers no terminal login (it offers %s); name the command that logs it in in the agents file's login: {\"command\": …, \"args\": […]}", cfg.Provider, offered(methods))
		}
	}
	env := childEnv(environ(cfg.Environ), append(terminalEnv(environ(cfg.Environ)), cfg.Agent.Env...), cfg.Home)
	for k, v := range extra {
		if s, ok := v.(string); ok && validEnvName(k) && k != "HOME" {
			env = append(env, k+"="+s)
		}
	}
	// The command may be the agent's choice: say what runs before it does.
	fmt.Fprintf(term.Err, "%s: running %s with HOME %s\n", cfg.Provider, strings.Join(append([]string{command}, args...), " "), cfg.Home)
	before := homeState(cfg.Home)
	cmd := exec.CommandContext(ctx, command, args...)
	cmd.Dir, cmd.Env = cfg.Home, env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = term.In, term.Out, term.Err
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("acp: the login of agent %s (%s) failed: %w", cfg.Provider, command, err)
	}
	if maps.Equal(before, homeState(cfg.Home)) {
		return fmt.Errorf("acp: the login of agent %s (%s) ended but left nothing in its HOME (%s): it was not completed (interrupted, or no account chosen); run it again", cfg.Provider, command, cfg.Home)
	}
	return nil
}

// terminalEnv names the variables of environ a login that draws a screen
// needs besides the agent's own: TERM and the locale (LANG, LANGUAGE and
// every LC_).
func terminalEnv(environ []string) []string {
	out := []string{"TERM", "COLORTERM", "LANG", "LANGUAGE"}
	for _, kv := range environ {
		if k, _, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(k, "LC_") {
			out = append(out, k)
		}
	}
	return out
}

// homeState is what a login could change in home: each regular file's
// size and time, by path, outside what sessions keep.
func homeState(home string) map[string]string {
	state := map[string]string{}
	_ = filepath.WalkDir(home, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		rel, _ := filepath.Rel(home, p)
		if d.IsDir() {
			if slices.Contains(sessionsKept, filepath.ToSlash(rel)) {
				return fs.SkipDir
			}
			return nil
		}
		if info, err := d.Info(); err == nil && info.Mode().IsRegular() {
			state[rel] = fmt.Sprintf("%d %d", info.Size(), info.ModTime().UnixNano())
		}
		return nil
	})
	return state
}

// pickLogin returns the terminal login Command.Auth names, else the first
// one methods offer.
func pickLogin(agent Command, methods []sdk.AuthMethod) (string, []string, map[string]any, bool) {
	if i := slices.IndexFunc(methods, func(m sdk.AuthMethod) bool { return methodID(m) == agent.Auth }); agent.Auth != "" && i >= 0 {
		if cmd, args, env, ok := terminalLogin(methods[i], agent); ok {
			return cmd, args, env, true
		}
	}
	for _, m := range methods {
		if cmd, args, env, ok := terminalLogin(m, agent); ok {
			return cmd, args, env, true
		}
	}
	return "", nil, nil, false
}

// authMethods starts cfg's agent once in a new temporary folder and
// returns the sign-in methods its initialize offers.
func authMethods(ctx context.Context, cfg Config) ([]sdk.AuthMethod, error) {
	a, closeAgent, err := scratch(cfg, "login")
	if err != nil {
		return nil, err
	}
	defer closeAgent()
	c, err := a.adopt()
	if err != nil {
		return nil, fmt.Errorf("acp: agent %s: %w", cfg.Provider, err)
	}
	ctx, cancel := context.WithTimeout(ctx, a.h.cfg.StartTimeout)
	defer cancel()
	init, err := c.conn.Initialize(ctx, initializeRequest())
	if err != nil {
		return nil, fmt.Errorf("acp: agent %s did not answer initialize: %w", cfg.Provider, err)
	}
	return init.AuthMethods, nil
}
