// Package acp runs back sessions on any agent that speaks the Agent Client
// Protocol (Claude Code, Gemini CLI, Codex… through their ACP adapters): a
// wake.Harness that starts the configured agent command as a child process
// per back session and talks ACP to it over the child's stdin and stdout.
//
// Per session the harness:
//
//   - starts the child in the bot's folder, in a process group of its own,
//     with a minimal environment (see Command.Env and Config.Home), inside
//     an OS sandbox (package sandbox) that lets it and its terminals read
//     the system, its command's location and Command.Read, and read and
//     write the bot's folder and its HOME, and nothing else;
//   - serves the bot's tools (post_message, ask_question and one tool per
//     alias of the bot's connectors map, see Config.Connectors) on a
//     loopback MCP server whose URL path holds an unguessable token, and
//     gives it to the agent in session/new's mcpServers;
//   - sends initialize, signs in with authenticate where the agent
//     offers a method it can use (see Command.Auth), then session/load
//     when the agent advertises loadSession and the Store holds the
//     session's agent session id, else session/new, with cwd the bot's
//     folder, and keeps in the Store a record saying whether the session
//     was continued or started fresh, and why (the agent cannot load, the
//     load failed, or there was no earlier session);
//   - bounds the start by Config.StartTimeout and reports its steps to the
//     wake.Progress of Open's context;
//   - sends one session/prompt per turn, one turn at a time, streams
//     session/update into the turn (text as the turn's reply, thoughts and
//     tool calls to a Work that implements wake.Reasoner or
//     wake.ToolReporter), relays session/request_permission through
//     Work.Approve, and sends session/cancel when the turn is stopped or
//     passes Config.TurnIdle or Config.TurnTimeout, killing a child that
//     does not end the turn within Config.CancelGrace;
//   - gives the system prompt (the session's, then QuestionPrompt) in the
//     first message of a new session, or as session/new's
//     _meta.systemPrompt.append to Claude Code's adapter;
//   - fails a start or a turn with a *StepError, a sentence naming the
//     bot, the agent and the step with the cause in words (an agent that
//     is not signed in is told what signs it in), telling how a child
//     ended (exit status, signal, or killed by the server and why) as it
//     is seen before the child is killed, quoting the agent's own last
//     line (each child keeps its last lines of stderr, of stdout text
//     that is not ACP, and of Claude Code's debug log, scrubbed; see
//     output.go and agentlog.go), recognising the common causes (the
//     model's API unreachable, a refused key, a used-up quota, not signed
//     in; causes.go) and ending with what to do next; failures are logged
//     at Warn, and stdout text that is not ACP once per start;
//   - reports a start that happens during a turn (after a restart, or
//     after the child ended) to the turn's wake.Progress too, and tells
//     the turn (wake.Notifier) when the agent could not continue its
//     earlier session;
//   - answers fs/read_text_file and fs/write_text_file inside the bot's
//     folder only (an absolute path outside it, a ".." element or a
//     symbolic link out of it is refused), and runs terminal/create's
//     commands in that folder (or one inside it, confined alike) with the
//     child's minimal environment, each in a process group of its own,
//     with bounded output, all killed when the session closes;
//   - kills the child with its process group on Close; a child that exits
//     fails the running turn, and the next turn starts a new child.
package acp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/connector"
	"github.com/agenthost/bots/telemetry"
	"github.com/agenthost/bots/wake"
	"github.com/agenthost/bots/wake/agents"
	"github.com/agenthost/bots/wake/agents/memsessions"
)

// Default timings.
const (
	// DefaultStartTimeout bounds a child's start: initialize and
	// session/new or session/load.
	DefaultStartTimeout = 60 * time.Second
	// DefaultCancelGrace is how long a stopped turn waits for the agent to
	// answer session/cancel before the child is killed.
	DefaultCancelGrace = 5 * time.Second
)

// toolServerName is the name the bot's MCP server is given in
// mcpServers; its tools are named in wake (wake.PostMessage,
// wake.AskQuestion, the workspace and channel tools).
const toolServerName = "bot"

// Command is how an agent is started.
type Command struct {
	// Command is the program: a path, or a name looked up in the server's
	// PATH when the child starts.
	Command string `json:"command"`
	// Args are its arguments.
	Args []string `json:"args,omitempty"`
	// Env names the variables passed through from the server's
	// environment; no other variable of the server reaches the child.
	// PATH is passed when named here; otherwise the child's PATH is
	// /usr/local/bin:/usr/bin:/bin. HOME is never passed: see Config.Home.
	Env []string `json:"env,omitempty"`
	// Auth names the sign-in method (an id of the agent's authMethods)
	// the harness authenticates with before it opens a session; "" picks
	// the first env_var method whose variables Env passes and the server
	// has set, and none when there is none. See auth.go.
	Auth string `json:"auth,omitempty"`
	// Login is the command Agents.Login runs to log the agent in
	// interactively; nil runs the agent's own terminal login method.
	Login *LoginCommand `json:"login,omitempty"`
	// Models are the models the agent offers, listed in the root state.
	Models []string `json:"models,omitempty"`
	// Read are more files or folders the agent and its terminals may read
	// and execute inside the sandbox, besides the system, the command's
	// own location, the bot's folder and HOME (see package sandbox).
	Read []string `json:"read,omitempty"`
}

// Config configures a Harness.
type Config struct {
	// Provider is the provider name the agent runs as. Required.
	Provider string
	// DisplayName and Description describe the agent in the root state;
	// DisplayName defaults to Provider.
	DisplayName, Description string
	// Agent is the command started per session. Its Command is required.
	Agent Command
	// Home is where the agent's login is kept: Agents.Login runs the
	// agent's login with it as HOME. No session runs in it: each session's agent
	// gets a HOME of its bot's own (BotHomes), or a temporary one, so it
	// reads none of the operator's settings or credentials, nor what
	// another bot's agent left; the login's files are copied into that
	// HOME before each start of the agent (never back), and Home itself
	// stays out of the agent's sandbox. "" copies nothing.
	Home string
	// BotHomes is the folder of the bots' own HOMEs: a bot's back
	// sessions on this agent run with HOME <BotHomes>/<bot>/<created>
	// (see wake.BackSessionMeta), which its sandbox lets it read and
	// write and no other bot's does; ForgetBot removes a deleted bot's.
	// "" gives each session a new temporary HOME, removed when the
	// session closes, as it does a session of no bot. New makes Home and
	// BotHomes absolute: a relative HOME would be taken from the bot's
	// folder, where the agent starts.
	BotHomes string
	// LoginHint is the command a person runs to log the agent in (for
	// the reference server, "go run ./examples/server -login <name>"),
	// named in the sentence that says the agent is not signed in; ""
	// names none.
	LoginHint string
	// Environ is the server's environment Agent.Env picks from; nil means
	// os.Environ.
	Environ func() []string
	// Store keeps each session's agent session record, so that a session
	// started again after a restart continues it with session/load, and
	// says when it started a fresh one instead; nil keeps them in memory.
	Store agents.SessionStore
	// Key names a session in Store; nil uses DefaultKey: the bot, person
	// and session name of a back session's _meta, which survive a restart
	// of the server (where the session's URI does not).
	Key func(wake.SessionInfo) string
	// Connectors gives each session its bot's connectors as tools on its
	// MCP server, read again at the session's open and at every turn; nil
	// offers none.
	Connectors agents.Connectors
	// StartTimeout bounds a child's start, initialize to a session ready;
	// zero means DefaultStartTimeout.
	StartTimeout time.Duration
	// TurnIdle is the longest a turn may go with no word from the agent
	// (the time it waits on the person or on a terminal does not count)
	// before the turn is stopped and fails, saying so; zero means
	// DefaultTurnIdle.
	TurnIdle time.Duration
	// TurnTimeout is the longest a turn may run, time waiting on the
	// person included, before it is stopped and fails, saying so; zero
	// means DefaultTurnTimeout.
	TurnTimeout time.Duration
	// CancelGrace is how long a stopped turn waits for the agent before
	// the child is killed; zero means DefaultCancelGrace.
	CancelGrace time.Duration
	// AllowUnsandboxed starts children and their terminals without a
	// sandbox where the kernel offers none, logged at Warn at each start;
	// otherwise such a start fails. Where the kernel offers one it is
	// always used.
	AllowUnsandboxed bool
	// Protect are paths no grant of the sandbox may reach (the server's
	// configuration folder, the bots' root, the vault, the users file): a
	// start whose grants would reach one fails.
	Protect []string
	// RefuseConnect, when set, is asked at each start of a child or a
	// terminal for the TCP ports it may not connect to: the server's own
	// listening ports (bots.Server gives its ListenPorts), so an agent
	// reaches the server through its tools alone, never as a client of
	// its own. Refused where the kernel offers Landlock network rules
	// (sandbox.Policy.RefuseConnect); the port of the session's own tool
	// server is never refused.
	RefuseConnect func() []uint16
	// Logger hears about children, their stderr (at Debug) and refusals;
	// nil discards.
	Logger *slog.Logger
	// Scrubber, when set, takes every secret value it knows out of all the
	// harness logs, the agent's stderr included. (What the agent hands to
	// its back session is scrubbed by the session host: see
	// wake/local's Config.Scrub.)
	Scrubber *connector.Scrubber
	// Telemetry receives the agent's starts and failures by step, its
	// ACP and MCP call latencies, labelled agent=Provider, and a span per
	// start and per ACP call, whose trace context the agent is given in
	// each request's _meta (traceparent); nil records none.
	Telemetry *telemetry.Hub
}

// DefaultKey names a session in a store by the bot, person and name of its
// wake.BackSessionMeta, or by its URI when its _meta names none.
func DefaultKey(s wake.SessionInfo) string {
	bot, person, name, ok := wake.BackSession(s.Meta)
	if !ok {
		return s.URI
	}
	return "bot:" + bot + "\x00" + person + "\x00" + name
}

// Harness runs the back sessions of one ACP agent. It is safe for
// concurrent use.
type Harness struct {
	cfg    Config
	log    *slog.Logger
	meters meters
}

var _ wake.Harness = (*Harness)(nil)

// New returns a Harness for cfg.
func New(cfg Config) (*Harness, error) {
	if cfg.Provider == "" {
		return nil, errors.New("acp: a harness needs a provider name")
	}
	if cfg.Agent.Command == "" {
		return nil, fmt.Errorf("acp: agent %q has no command", cfg.Provider)
	}
	for _, name := range cfg.Agent.Env {
		if !validEnvName(name) {
			return nil, fmt.Errorf("acp: agent %q: %q is not an environment variable name", cfg.Provider, name)
		}
	}
	for _, p := range []*string{&cfg.Home, &cfg.BotHomes} {
		if *p == "" {
			continue
		}
		abs, err := filepath.Abs(*p)
		if err != nil {
			return nil, fmt.Errorf("acp: agent %q: its HOME's folder %s: %w", cfg.Provider, *p, err)
		}
		*p = abs
	}
	if cfg.StartTimeout <= 0 {
		cfg.StartTimeout = DefaultStartTimeout
	}
	if cfg.TurnIdle <= 0 {
		cfg.TurnIdle = DefaultTurnIdle
	}
	if cfg.TurnTimeout <= 0 {
		cfg.TurnTimeout = DefaultTurnTimeout
	}
	if cfg.CancelGrace <= 0 {
		cfg.CancelGrace = DefaultCancelGrace
	}
	if cfg.Store == nil {
		cfg.Store = &memsessions.Store{}
	}
	if cfg.Key == nil {
		cfg.Key = DefaultKey
	}
	if cfg.DisplayName == "" {
		cfg.DisplayName = cfg.Provider
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if cfg.Scrubber != nil {
		log = cfg.Scrubber.Logger(log)
	}
	return &Harness{cfg: cfg, log: log.With("agent", cfg.Provider), meters: newMeters(cfg.Telemetry, cfg.Provider)}, nil
}

// Info is the agent's entry in a root state's agents.
func (h *Harness) Info() ahp.AgentInfo {
	models := ahp.List[ahp.SessionModelInfo]{}
	for _, m := range h.cfg.Agent.Models {
		models = append(models, ahp.SessionModelInfo{ID: m, Provider: h.cfg.Provider, Name: m})
	}
	desc := h.cfg.Description
	if desc == "" {
		desc = "An ACP agent: " + h.cfg.Agent.Command
	}
	return ahp.AgentInfo{Provider: h.cfg.Provider, DisplayName: h.cfg.DisplayName, Description: desc, Models: models}
}

// Open starts the agent of one session: its tool server and its child,
// through initialize and session/new (or session/load). An error refuses
// the session's start.
func (h *Harness) Open(ctx context.Context, s wake.SessionInfo) (wake.Agent, error) {
	if s.Dir == "" {
		return nil, errors.New("acp: a session needs a folder")
	}
	a, err := newAgent(h, s)
	if err != nil {
		return nil, h.failed(h.log, botName(s), &StepError{Step: StepStart, Cause: clean(strings.TrimPrefix(err.Error(), "acp: ")), Err: err}, nil)
	}
	a.openTools(ctx)
	a.syncTools(ctx)
	if _, err := a.ensure(ctx); err != nil {
		a.Close()
		return nil, err
	}
	return a, nil
}
