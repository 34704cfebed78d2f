// Package agents is the port to agents a host runs outside its process,
// each one a provider back sessions may run on: a Set gives their
// harnesses, checks them and logs one in, as an Env says. Package
// wake/acp's Agents, read from an agents file by acp.ReadAgents, is the
// Set of ACP agents; the module root takes a Set as a value
// (bots.Server.Agents), so an embedder that runs none links no agent SDK.
//
// The package also holds the port that keeps each back session's agent
// session record (SessionStore): memsessions and filesessions keep them
// in memory and files, pgsessions in a database, none of them needing an
// agent SDK.
package agents

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"time"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/connector"
	"github.com/agenthost/bots/telemetry"
	"github.com/agenthost/bots/wake"
)

// A Set is the agents a host runs outside its process. Its methods may be
// called concurrently; none changes the Set.
type Set interface {
	// Providers names the agents, in the order the Set keeps them.
	Providers() []string
	// Harnesses returns each agent's harness, run as env says, by
	// provider, and each one's entry in a root state's agents in
	// Providers' order. It refuses agents it cannot run as env says: one
	// that names no command, or any where the kernel offers no sandbox
	// and env does not AllowUnsandboxed.
	Harnesses(env Env) (map[string]wake.Harness, []ahp.AgentInfo, error)
	// Check starts every agent at once, as a back session would run it
	// under env, and calls each with every agent's Result as its check
	// ends, one call at a time. It returns when every check has ended,
	// and keeps no session record.
	Check(ctx context.Context, env Env, each func(Result))
	// Login runs the login of the agent provider names on term, as the
	// person at it and outside the sandbox, where every back session's
	// own HOME copies the login from; then it prints where the login is
	// kept and the agent's check to term.Out. Provider must be one of
	// Providers.
	Login(ctx context.Context, env Env, provider string, term Terminal) error
}

// Env is what a host gives every agent of a Set, beyond what the Set
// itself says of each.
type Env struct {
	// Connectors are the connectors of the session's bot, offered to the
	// agent as tools; nil offers none.
	Connectors Connectors
	// LoginCommand, when set, prefixes an agent's provider name to say how
	// a person logs it in ("go run ./examples/server -login "), for an
	// agent whose own login hint is empty.
	LoginCommand string
	// Logger is the host's; nil discards.
	Logger *slog.Logger
	// Telemetry counts the agents' starts and turns; nil counts nothing.
	Telemetry *telemetry.Hub
	// AllowUnsandboxed lets agents start where the kernel offers no
	// sandbox, logged at Warn; where the kernel offers one it is always
	// used.
	AllowUnsandboxed bool
	// Protect are paths no grant of an agent's sandbox may reach (the
	// host's configuration folder, the bots' root, the vault, the users
	// file), beside those the Set names itself.
	Protect []string
	// RefuseConnect, when set, answers the TCP ports agents may not
	// connect to: the host's own listening ports, so that an agent
	// reaches the host through its tools alone.
	RefuseConnect func() []uint16
	// Sessions, when set, answers the store of a provider's agent session
	// records shared by every instance of the host (its database); it
	// replaces an agent's store in files, or its lack of one. Nil keeps
	// each agent's own.
	Sessions func(provider string) SessionStore
}

// Connectors gives back sessions the connectors of their bot as tools, one
// per alias. Both methods read the bot's connectors map as it is at the
// call, so an edit reaches a running session; they may be called
// concurrently. The module root implements it over the record store, the
// host's adapters and its vault.
type Connectors interface {
	// List answers the tools of the session's bot's connectors as its map
	// is now. The session's bot is in s.Meta (wake.BackSession).
	List(ctx context.Context, s wake.SessionInfo) ([]connector.Tool, error)
	// Call calls the connector under alias as the map is now, for the
	// person the session answers (s.Owner). A call after the alias was
	// taken out is an error wrapping connector.ErrNoAlias. Neither the
	// result nor the error holds a credential value.
	Call(ctx context.Context, s wake.SessionInfo, alias string, args json.RawMessage) (connector.Result, error)
}

// Terminal is where a login talks with the person running it.
type Terminal struct {
	In       io.Reader
	Out, Err io.Writer
}

// Result is what a check found of one agent.
type Result struct {
	// Provider names the agent.
	Provider string
	// Ready is true when the agent started, signed in and opened a
	// session.
	Ready bool
	// Problem says in one sentence what is missing and what fixes it; ""
	// when Ready.
	Problem string
	// Via says what the agent was signed in with, when Ready and the
	// host can tell: "the key in OPENAI_API_KEY", "the login kept in
	// <HOME> (.codex/auth.json)"; "" when it used neither.
	Via string
	// Took is how long the check ran.
	Took time.Duration
}

// String is the check's line: "<provider>: ready" or "<provider>: not
// ready: <problem>".
func (r Result) String() string {
	if r.Ready && r.Via != "" {
		return r.Provider + ": ready, signed in with " + r.Via
	}
	if r.Ready {
		return r.Provider + ": ready"
	}
	return r.Provider + ": not ready: " + r.Problem
}
