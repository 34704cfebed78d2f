package acp

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	sdk "github.com/coder/acp-go-sdk"
)

// Signing in. An agent lists its sign-in methods in initialize's
// authMethods, of three kinds:
//
//   - env_var: the agent reads a key from variables it names. The harness
//     calls authenticate with the first such method whose variables
//     Command.Env passes and the server has set (Codex answers session/new
//     with "Authentication required" until it does).
//   - agent: the agent signs itself in, from a login kept in its HOME or
//     from a key it reads; Command.Auth names the one to authenticate with
//     (Gemini CLI's "gemini-api-key" reads GEMINI_API_KEY, and session/load
//     fails until it is called).
//   - terminal (or an agent method with a "terminal-auth" _meta, as Claude
//     Code's adapter offers): a person runs the agent's login in a
//     terminal, once, with the agent's HOME; see Agents.Login. authenticate is
//     not called for it.
//
// The harness never passes a key itself, so no secret goes into the ACP
// traffic or the logs: the agent reads it from its own environment.

// LoginCommand is a command that logs an agent in interactively, named in
// an agents file as "login": {"command": …, "args": […]}.
type LoginCommand struct {
	// Command is the program: a path, or a name looked up in the server's
	// PATH.
	Command string `json:"command"`
	// Args are its arguments.
	Args []string `json:"args,omitempty"`
}

// ErrNotSignedIn marks an error saying that the agent is not signed in;
// its text says what signs it in.
var ErrNotSignedIn = errors.New("acp: the agent is not signed in")

// signInError is an error whose text says what signs the agent in.
type signInError struct{ msg string }

func (e *signInError) Error() string        { return e.msg }
func (e *signInError) Is(target error) bool { return target == ErrNotSignedIn }

// terminalAuthMeta is the _meta key of the terminal login an agent method
// may describe ({"command", "args", "env"}) before terminal methods were
// part of ACP; a client that can run it says so with the same key in its
// capabilities' _meta. Claude Code's adapter offers its login this way.
const terminalAuthMeta = "terminal-auth"

// authRequired is ACP's error code for "Authentication required".
const authRequired = -32000

// initializeRequest is the harness's initialize: files and terminals, and
// terminal logins (which Agents.Login runs), so that agents list them.
func initializeRequest() sdk.InitializeRequest {
	return sdk.InitializeRequest{
		ProtocolVersion: sdk.ProtocolVersionNumber,
		ClientCapabilities: sdk.ClientCapabilities{
			Fs:       sdk.FileSystemCapabilities{ReadTextFile: true, WriteTextFile: true},
			Terminal: true,
			Auth:     sdk.AuthCapabilities{Terminal: true},
			Meta:     map[string]any{terminalAuthMeta: true},
		},
		ClientInfo: &sdk.Implementation{Name: "agenthost-bots", Version: "1"},
	}
}

// methodID is a sign-in method's id.
func methodID(m sdk.AuthMethod) string {
	switch {
	case m.EnvVar != nil:
		return m.EnvVar.Id
	case m.Terminal != nil:
		return m.Terminal.Id
	case m.Agent != nil:
		return m.Agent.Id
	}
	return ""
}

// terminalLogin returns the command line of m's terminal login, if m is
// one: the agent's own command with the method's arguments for a terminal
// method, the command the method names for a "terminal-auth" _meta.
func terminalLogin(m sdk.AuthMethod, agent Command) (cmd string, args []string, env map[string]any, ok bool) {
	if m.Terminal != nil {
		return agent.Command, append(slices.Clone(agent.Args), m.Terminal.Args...), m.Terminal.Env, true
	}
	if m.Agent == nil {
		return "", nil, nil, false
	}
	meta, _ := m.Agent.Meta[terminalAuthMeta].(map[string]any)
	cmd, _ = meta["command"].(string)
	if cmd == "" {
		return "", nil, nil, false
	}
	raw, _ := meta["args"].([]any)
	for _, a := range raw {
		if s, ok := a.(string); ok {
			args = append(args, s)
		}
	}
	env, _ = meta["env"].(map[string]any)
	return cmd, args, env, true
}

// keys says which variables the agent gets set: those Command.Env passes
// that the server's environment holds with a value.
type keys struct {
	named map[string]bool // in Command.Env
	set   map[string]bool // named and set, not empty
}

func keysOf(cfg Config) keys {
	k := keys{named: map[string]bool{}, set: map[string]bool{}}
	for _, n := range cfg.Agent.Env {
		k.named[n] = true
	}
	for _, kv := range environ(cfg.Environ) {
		if n, v, ok := strings.Cut(kv, "="); ok && v != "" && k.named[n] {
			k.set[n] = true
		}
	}
	return k
}

// missing says what an env_var method still needs, or "" when every
// variable it requires is set and at least one is.
func (k keys) missing(vars []sdk.AuthEnvVar) string {
	var notNamed, notSet []string
	some := false
	for _, v := range vars {
		switch {
		case k.set[v.Name]:
			some = true
		case v.Optional:
		case k.named[v.Name]:
			notSet = append(notSet, v.Name)
		default:
			notNamed = append(notNamed, v.Name)
		}
	}
	switch {
	case len(notNamed) > 0:
		return fmt.Sprintf("signing in needs %s; add %s to the agents file's env and set %[2]s", and(notNamed), them(notNamed))
	case len(notSet) > 0:
		return fmt.Sprintf("signing in needs %s, which the agents file's env passes but the server's environment does not set; set %s", and(notSet), them(notSet))
	case !some && len(vars) > 0:
		return fmt.Sprintf("signing in needs one of %s; add it to the agents file's env and set it", or(names(vars)))
	}
	return ""
}

func names(vars []sdk.AuthEnvVar) []string {
	var out []string
	for _, v := range vars {
		out = append(out, v.Name)
	}
	return out
}

func and(s []string) string { return join(s, " and ") }
func or(s []string) string  { return join(s, " or ") }

func join(s []string, last string) string {
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + last + s[len(s)-1]
}

func them(s []string) string {
	if len(s) == 1 {
		return "it"
	}
	return "them"
}

// chooseAuth returns the method the harness authenticates with: the one
// Command.Auth names, else the first env_var method whose variables are
// set; "" calls none. An error says what is missing.
func chooseAuth(cfg Config, methods []sdk.AuthMethod) (string, error) {
	k := keysOf(cfg)
	if id := cfg.Agent.Auth; id != "" {
		i := slices.IndexFunc(methods, func(m sdk.AuthMethod) bool { return methodID(m) == id })
		if i < 0 {
			return "", &signInError{fmt.Sprintf("the agents file's auth names %q, which the agent does not offer (it offers %s)", id, offered(methods))}
		}
		m := methods[i]
		if m.EnvVar != nil {
			if miss := k.missing(m.EnvVar.Vars); miss != "" {
				return "", &signInError{miss}
			}
		}
		if _, _, _, login := terminalLogin(m, cfg.Agent); login {
			return "", nil // a terminal login is run by Login, not authenticate
		}
		return id, nil
	}
	for _, m := range methods {
		if m.EnvVar != nil && k.missing(m.EnvVar.Vars) == "" {
			return m.EnvVar.Id, nil
		}
	}
	return "", nil
}

// offered lists the ids of methods, or says there are none.
func offered(methods []sdk.AuthMethod) string {
	var ids []string
	for _, m := range methods {
		ids = append(ids, methodID(m))
	}
	if len(ids) == 0 {
		return "no sign-in methods"
	}
	return strings.Join(ids, ", ")
}

// signIn authenticates the child with the method chooseAuth picks.
func (a *agent) signIn(ctx context.Context, c *child, methods []sdk.AuthMethod) error {
	id, err := chooseAuth(a.h.cfg, methods)
	if err != nil {
		a.log.Warn("acp: the agent cannot sign in", "problem", err.Error(), "offered", offered(methods))
		return err
	}
	if id == "" {
		a.log.Debug("acp: no sign-in method to call", "offered", offered(methods))
		return nil
	}
	if _, err := c.conn.Authenticate(ctx, sdk.AuthenticateRequest{MethodId: id}); err != nil {
		if ctx.Err() != nil || !c.alive() {
			return err
		}
		err := &signInError{fmt.Sprintf("the agent refused to sign in with %s: %s", id, rpcMessage(err))}
		a.log.Warn("acp: the agent cannot sign in", "problem", err.Error())
		return err
	}
	a.log.Info("acp: signed in", "method", id)
	return nil
}

// rpcMessage is the message of a JSON-RPC error, or the error's text.
func rpcMessage(err error) string {
	var re *sdk.RequestError
	if errors.As(err, &re) {
		return re.Message
	}
	return err.Error()
}

// explainAuth turns the agent's "Authentication required" answer to step
// into a sentence saying what signs it in; other errors are returned as
// they are.
func (a *agent) explainAuth(step string, err error, methods []sdk.AuthMethod) error {
	var re *sdk.RequestError
	if !errors.As(err, &re) || re.Code != authRequired {
		return err
	}
	err = &signInError{notSignedIn(a.h.cfg, step, re.Message, methods)}
	a.log.Warn("acp: the agent is not signed in", "problem", err.Error(), "offered", offered(methods))
	return err
}

// notSignedIn says that the agent answered step with "Authentication
// required" (or its own words, said), and what signs it in.
func notSignedIn(cfg Config, step, said string, methods []sdk.AuthMethod) string {
	k := keysOf(cfg)
	var vars, agentIDs []string
	login := cfg.Agent.Login != nil
	used, _ := chooseAuth(cfg, methods)
	for _, m := range methods {
		if _, _, _, ok := terminalLogin(m, cfg.Agent); ok {
			login = true
			continue
		}
		if m.EnvVar != nil {
			for _, v := range m.EnvVar.Vars {
				if !v.Optional && !slices.Contains(vars, v.Name) {
					vars = append(vars, v.Name)
				}
			}
			continue
		}
		if m.Agent != nil {
			agentIDs = append(agentIDs, m.Agent.Id)
		}
	}
	var ways []string
	switch {
	case used != "":
		if unset := k.unset(); len(unset) > 0 {
			ways = append(ways, fmt.Sprintf("it still asks after signing in with %s, and %s %s in the agents file's env but not set in the server's environment; set %s",
				used, and(unset), isAre(unset), them(unset)))
		} else {
			ways = append(ways, fmt.Sprintf("it still asks after signing in with %s; check the key it reads", used))
		}
	case len(vars) > 0:
		var missing []sdk.AuthEnvVar
		for _, v := range vars {
			missing = append(missing, sdk.AuthEnvVar{Name: v})
		}
		var named []string
		for _, v := range vars {
			if k.named[v] {
				named = append(named, v)
			}
		}
		switch {
		case len(vars) == 1:
			ways = append(ways, k.missing(missing))
		case len(named) > 0:
			// the agents file names one already: setting it is the step
			ways = append(ways, fmt.Sprintf("signing in needs %s; the agents file's env passes %s, which the server's environment does not set: set %s", or(vars), and(named), them(named)))
		default:
			ways = append(ways, fmt.Sprintf("signing in needs %s; add one to the agents file's env and set it", or(vars)))
		}
	}
	if login {
		if cfg.LoginHint != "" {
			ways = append(ways, "log it in with "+cfg.LoginHint)
		} else {
			ways = append(ways, "log it in with its own login, with HOME "+cfg.Home)
		}
	}
	if used == "" {
		var unset []string
		for _, n := range k.unset() {
			if !slices.Contains(vars, n) {
				unset = append(unset, n)
			}
		}
		if len(unset) > 0 {
			ways = append(ways, fmt.Sprintf("set %s, which the agents file's env passes but the server's environment does not set", or(unset)))
		}
	}
	if len(agentIDs) > 0 && cfg.Agent.Auth == "" {
		ways = append(ways, "name the sign-in method it should use in the agents file's auth (it offers "+strings.Join(agentIDs, ", ")+")")
	}
	msg := strings.Join(ways, "; or ")
	if len(ways) == 0 {
		msg = "it offers no sign-in method this host can use"
	}
	switch said = strings.TrimSuffix(said, "."); {
	case said != "" && !strings.EqualFold(said, "Authentication required"):
		return fmt.Sprintf("the agent answered %s with %q; %s", step, said, msg)
	case strings.HasPrefix(msg, "signing in needs"):
		return msg
	}
	return "the agent is not signed in: " + msg
}

// unset returns the variables Command.Env names that the server's
// environment does not set, PATH aside.
func (k keys) unset() []string {
	var out []string
	for n := range k.named {
		if !k.set[n] && n != "PATH" {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

func isAre(s []string) string {
	if len(s) == 1 {
		return "is"
	}
	return "are"
}
