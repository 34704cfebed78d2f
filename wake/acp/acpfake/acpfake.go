// Package acpfake is a fake ACP agent for tests, built on acp-go-sdk's
// agent side: a test binary runs it when Env is set (see Main), and a
// harness under test starts that binary as its agent command.
package acpfake

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	sdk "github.com/coder/acp-go-sdk"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Env is the variable that makes a test binary run as the fake agent:
// "1" runs it (see Main).
const Env = "ACP_FAKE_AGENT"

// NoLoadEnv set to "1" makes the fake agent advertise no session/load.
const NoLoadEnv = "FAKE_NO_LOAD"

// Switches of the fake agent for the harness's limits and failures.
const (
	// IgnoreCancelEnv set to "1" makes the fake ignore session/cancel and
	// run one prompt at a time, as an agent that is stuck does: a prompt
	// sent while one runs waits for it.
	IgnoreCancelEnv = "FAKE_IGNORE_CANCEL"
	// HangInitEnv set to "1" makes the fake never answer initialize.
	HangInitEnv = "FAKE_HANG_INIT"
	// NewFailEnv set to a message makes session/new fail with it, as
	// JSON-RPC error -32603 (an internal error, not ACP's -32000
	// "Authentication required", which AuthEnv's modes answer).
	NewFailEnv = "FAKE_NEW_FAIL"
	// NewExitEnv set to a number makes the fake exit with that status
	// when asked for session/new, without answering.
	NewExitEnv = "FAKE_NEW_EXIT"
	// NameEnv set names the fake in initialize's agentInfo (the harness
	// gives a system prompt in _meta to some agents by their name).
	NameEnv = "FAKE_AGENT_NAME"
)

// The fake agent's sign-in, set by AuthEnv:
//
//	env    offers an env_var method, KeyMethod, reading KeyEnv: session/new
//	       and session/load answer "Authentication required" until
//	       authenticate is called with it while KeyEnv is set
//	login  offers an agent method, LoginMethod, and, to a client that runs
//	       terminal logins, a terminal method, TerminalMethod, whose args
//	       are ["login"]: session/new and session/load answer
//	       "Authentication required" until the fake's own login (Main with
//	       the last argument "login") has written LoginFile in its HOME
//	agent-key  offers an agent method, AgentKeyMethod, which authenticate
//	       takes whatever the environment holds, as Gemini CLI does:
//	       session/new then answers "Authentication required" with
//	       MissingKey unless KeyEnv is set
const (
	AuthEnv        = "FAKE_AUTH"
	KeyEnv         = "FAKE_API_KEY"
	KeyMethod      = "fake-key"
	LoginMethod    = "fake-login"
	TerminalMethod = "fake-terminal"
	LoginFile      = ".fake-login"
	AgentKeyMethod = "fake-agent-key"
	MissingKey     = "Fake API key is missing"
)

// HangNewEnv set to "1" makes session/new never answer.
const HangNewEnv = "FAKE_HANG_NEW"

// Switches of the fake agent for what an agent says besides ACP, and for
// a session it cannot continue.
const (
	// StderrStartEnv set to text makes the fake write it on stderr as it
	// starts ("\n" in it splits lines).
	StderrStartEnv = "FAKE_STDERR_START"
	// StdoutStartEnv set to text makes the fake write it on stdout as it
	// starts, before any ACP ("\n" in it splits lines), as a command that
	// prints a banner does.
	StdoutStartEnv = "FAKE_STDOUT_START"
	// LoadFailEnv set to a message makes session/load fail with it, as
	// JSON-RPC error -32603 (Gemini CLI answers "No previous sessions
	// found for this project" for a session no turn reached the model
	// in).
	LoadFailEnv = "FAKE_LOAD_FAIL"
)

// lines is text with each "\n" in it a line break.
func lines(text string) string { return strings.ReplaceAll(text, `\n`, "\n") }

// debugLog writes text as an error line of the debug log Claude Code keeps
// in its HOME (.claude/debug/<session>.txt), as it logs each attempt to
// reach an API it cannot.
func debugLog(text string) {
	dir := filepath.Join(os.Getenv("HOME"), ".claude", "debug")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		fmt.Fprintln(os.Stderr, "acpfake: debug log:", err)
		return
	}
	f, err := os.OpenFile(filepath.Join(dir, "fake.txt"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		fmt.Fprintln(os.Stderr, "acpfake: debug log:", err)
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "%s [ERROR] %s\n", time.Now().UTC().Format(time.RFC3339Nano), text)
}

// The bot's tools the fake agent calls by name.
const (
	postMessage = "post_message"
	askQuestion = "ask_question"
)

// Main runs the fake agent on stdin and stdout and exits when Env is "1";
// otherwise it returns at once. Call it first in a test binary's TestMain.
//
// With the last argument "login" it runs the fake's login instead: it asks
// for a name on out, reads a line from in, writes LoginFile in HOME and
// says "logged in as <name>"; an empty name fails it with status 1.
func Main() {
	if os.Getenv(Env) != "1" {
		return
	}
	if os.Args[len(os.Args)-1] == "login" {
		if err := login(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "login:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if text := os.Getenv(StderrStartEnv); text != "" {
		fmt.Fprintln(os.Stderr, lines(text))
	}
	if text := os.Getenv(StdoutStartEnv); text != "" {
		fmt.Fprintln(os.Stdout, lines(text))
	}
	Serve(os.Stdin, os.Stdout)
	os.Exit(0)
}

// login is the fake's interactive login.
func login(in io.Reader, out io.Writer) error {
	fmt.Fprint(out, "name: ")
	line, err := bufio.NewReader(in).ReadString('\n')
	name := strings.TrimSpace(line)
	if name == "" {
		return fmt.Errorf("no name given (%v)", err)
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(home, LoginFile), []byte(name+"\n"), 0o600); err != nil {
		return err
	}
	fmt.Fprintln(out, "logged in as "+name)
	return nil
}

// loggedIn reports whether the fake's login wrote LoginFile in HOME.
func loggedIn() bool {
	home, err := os.UserHomeDir()
	if err != nil {
		return false
	}
	_, err = os.Stat(filepath.Join(home, LoginFile))
	return err == nil
}

// Serve serves the fake agent on in and out until the client goes.
func Serve(in io.Reader, out io.Writer) {
	f := &fake{sessions: map[sdk.SessionId]*fakeSession{}}
	// Nothing is read, so no handler runs, before f.conn is set.
	open := make(chan struct{})
	f.conn = sdk.NewAgentSideConnection(f, out, gated{in, open})
	close(open)
	<-f.conn.Done()
}

// gated reads from r once open is closed.
type gated struct {
	r    io.Reader
	open <-chan struct{}
}

func (g gated) Read(p []byte) (int, error) {
	<-g.open
	return g.r.Read(p)
}

// fake is an ACP agent for tests. It answers the words of a prompt (the
// text after the last context block):
//
//	expand <words>     expands $NAME in words from its environment, then does them
//	say <words>        streams a thought, a tool call, and <words> as text in two chunks
//	post <text>        calls post_message through the MCP server it was given
//	ask <question>     calls ask_question, then posts "you said: <answer>"
//	permit             requests a permission, then posts allowed, rejected or cancelled
//	read <path>        reads a file through the client and says it, or "refused: <why>"
//	write <path> <s>   writes s to a file through the client: says "wrote" or "refused: <why>"
//	sleep              says "sleeping" and waits for session/cancel
//	hang               says "hanging" and never ends the turn, ignoring session/cancel
//	silent             says nothing and ends the turn (cancelled) when cancelled
//	tick               says "tick" every 10ms until cancelled
//	exit <n>           exits with status n
//	signal             kills itself with SIGKILL
//	system             says "system: <text>" of the system prompt it was given in _meta, or "system: none"
//	traceparent        says "traceparent: <value>" of the W3C trace context in the prompt's _meta, or "traceparent: none"
//	crash              exits with status 3
//	signedout          answers "Authentication required", as an agent whose login expired does
//	pid                says "pid <pid>"
//	env                says its environment, one variable a line, sorted
//	session            says "session <id> loaded=<bool>"
//	prompt             says the whole prompt
//	tool <name> <json> calls the MCP tool name with the JSON object and says "tool: <result>" or "tool failed: <why>"
//	tools              says the names of the MCP tools offered, sorted, comma-separated
//	call <name> <json> calls the MCP tool name with the JSON object and posts "tool: <result>" or "tool failed: <why>"
//	post-tools         posts the names of the MCP tools offered, sorted, comma-separated
//	terminal <cwd> <cmd> [args…]  runs cmd in a client terminal in cwd ("-" for none), waits, releases it, and says "exit <code>: <output>" or "refused: <why>"
//	background <cmd> [args…]      starts cmd in a client terminal and says "started <terminal id>", leaving it running
//	shell <script>     runs sh -c script in a client terminal in the bot's folder and posts "exit <code>: <output>" or "refused: <why>"
//	probe <path>       reads the file (or lists the folder) at path itself and posts "read <n> bytes" or "refused: <why>"
//	probe-write <path> writes "probe" to the file at path itself and posts "wrote" or "refused: <why>"
//	stderr <text> [then <words>]  writes text on stderr ("\n" splits lines), then does words, or
//	                   says nothing until cancelled (as an agent that retries in silence)
//	stdout <text> [then <words>]  the same on stdout, outside ACP
//	debuglog <text> [then <words>]  the same as an error line of Claude Code's debug log in its HOME
//	fail <message>     answers the prompt with JSON-RPC error -32603 and message
//	stop <reason>      ends the turn with the stop reason (refusal, max_tokens…)
//	dial <host:port>   connects to host:port over TCP itself and posts "connected" or "refused: <why>"
type fake struct {
	conn *sdk.AgentSideConnection

	mu       sync.Mutex
	n        int
	sessions map[sdk.SessionId]*fakeSession

	prompting sync.Mutex // held by a prompt when IgnoreCancelEnv is set
	authed    bool       // authenticate succeeded
}

type fakeSession struct {
	id     sdk.SessionId
	url    string
	loaded bool
	system string // _meta.systemPrompt.append
	cancel context.CancelFunc
}

func (f *fake) Authenticate(ctx context.Context, p sdk.AuthenticateRequest) (sdk.AuthenticateResponse, error) {
	ok := false
	switch mode := os.Getenv(AuthEnv); {
	case mode == "env" && p.MethodId == KeyMethod:
		ok = os.Getenv(KeyEnv) != ""
	case mode == "login" && p.MethodId == LoginMethod:
		ok = loggedIn()
	case mode == "agent-key" && p.MethodId == AgentKeyMethod:
		ok = true
	case mode == "":
		ok = true
	default:
		return sdk.AuthenticateResponse{}, sdk.NewInvalidParams("no such method: " + p.MethodId)
	}
	if !ok {
		return sdk.AuthenticateResponse{}, sdk.NewAuthRequired(map[string]any{"method": p.MethodId})
	}
	f.mu.Lock()
	f.authed = true
	f.mu.Unlock()
	return sdk.AuthenticateResponse{}, nil
}

func (f *fake) Initialize(ctx context.Context, p sdk.InitializeRequest) (sdk.InitializeResponse, error) {
	if os.Getenv(HangInitEnv) == "1" {
		<-make(chan struct{})
	}
	var info *sdk.Implementation
	if name := os.Getenv(NameEnv); name != "" {
		info = &sdk.Implementation{Name: name, Title: sdk.Ptr("Fake Agent"), Version: "1"}
	}
	methods := []sdk.AuthMethod{}
	switch os.Getenv(AuthEnv) {
	case "env":
		methods = append(methods, sdk.AuthMethod{EnvVar: &sdk.AuthMethodEnvVarInline{
			Id: KeyMethod, Name: "Use " + KeyEnv, Type: "env_var", Vars: []sdk.AuthEnvVar{{Name: KeyEnv, Secret: true}},
		}})
	case "agent-key":
		methods = append(methods, sdk.AuthMethod{Agent: &sdk.AuthMethodAgent{Id: AgentKeyMethod, Name: "Fake API key"}})
	case "login":
		methods = append(methods, sdk.AuthMethod{Agent: &sdk.AuthMethodAgent{Id: LoginMethod, Name: "Log in"}})
		if p.ClientCapabilities.Auth.Terminal {
			methods = append(methods, sdk.AuthMethod{Terminal: &sdk.AuthMethodTerminalInline{
				Id: TerminalMethod, Name: "Log in in a terminal", Type: "terminal", Args: []string{"login"},
			}})
		}
	}
	return sdk.InitializeResponse{
		AgentInfo:       info,
		ProtocolVersion: sdk.ProtocolVersionNumber,
		AgentCapabilities: sdk.AgentCapabilities{
			LoadSession:     os.Getenv(NoLoadEnv) != "1",
			McpCapabilities: sdk.McpCapabilities{Http: true},
		},
		AuthMethods: methods,
	}, nil
}

// signedIn reports whether a session may be opened: authenticate was
// called, or no sign-in is asked, or (for the login) it is logged in.
func (f *fake) signedIn() bool {
	f.mu.Lock()
	authed := f.authed
	f.mu.Unlock()
	switch os.Getenv(AuthEnv) {
	case "":
		return true
	case "login":
		return authed || loggedIn()
	case "agent-key":
		return authed && os.Getenv(KeyEnv) != ""
	}
	return authed
}

// authRequired is the error of a session the fake is not signed in for.
func authRequired() error {
	if os.Getenv(AuthEnv) == "agent-key" {
		return &sdk.RequestError{Code: -32000, Message: MissingKey}
	}
	return sdk.NewAuthRequired(nil)
}

func (f *fake) session(id sdk.SessionId) *fakeSession {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.sessions[id]
}

func mcpURL(servers []sdk.McpServer) string {
	for _, s := range servers {
		if s.Http != nil {
			return s.Http.Url
		}
	}
	return ""
}

// systemPrompt is the system prompt given in a request's _meta.
func systemPrompt(meta map[string]any) string {
	sp, _ := meta["systemPrompt"].(map[string]any)
	s, _ := sp["append"].(string)
	return s
}

func (f *fake) NewSession(ctx context.Context, p sdk.NewSessionRequest) (sdk.NewSessionResponse, error) {
	if msg := os.Getenv(NewFailEnv); msg != "" {
		return sdk.NewSessionResponse{}, &sdk.RequestError{Code: -32603, Message: msg}
	}
	if code := os.Getenv(NewExitEnv); code != "" {
		n, _ := strconv.Atoi(code)
		os.Exit(n)
	}
	if os.Getenv(HangNewEnv) == "1" {
		<-make(chan struct{})
	}
	if !f.signedIn() {
		return sdk.NewSessionResponse{}, authRequired()
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	id := sdk.SessionId(fmt.Sprintf("fake-%d-%d", os.Getpid(), f.n))
	f.sessions[id] = &fakeSession{id: id, url: mcpURL(p.McpServers), system: systemPrompt(p.Meta)}
	return sdk.NewSessionResponse{SessionId: id}, nil
}

func (f *fake) LoadSession(ctx context.Context, p sdk.LoadSessionRequest) (sdk.LoadSessionResponse, error) {
	if msg := os.Getenv(LoadFailEnv); msg != "" {
		return sdk.LoadSessionResponse{}, &sdk.RequestError{Code: -32603, Message: msg}
	}
	if !f.signedIn() {
		return sdk.LoadSessionResponse{}, authRequired()
	}
	if !strings.HasPrefix(string(p.SessionId), "fake-") {
		return sdk.LoadSessionResponse{}, sdk.NewInvalidParams("no such session")
	}
	f.mu.Lock()
	f.sessions[p.SessionId] = &fakeSession{id: p.SessionId, url: mcpURL(p.McpServers), loaded: true, system: systemPrompt(p.Meta)}
	f.mu.Unlock()
	// The history is replayed; the client must not take it for a turn.
	f.say(ctx, p.SessionId, "history")
	return sdk.LoadSessionResponse{}, nil
}

func (f *fake) Cancel(ctx context.Context, p sdk.CancelNotification) error {
	if os.Getenv(IgnoreCancelEnv) == "1" {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if s := f.sessions[p.SessionId]; s != nil && s.cancel != nil {
		s.cancel()
	}
	return nil
}

func (f *fake) CloseSession(ctx context.Context, _ sdk.CloseSessionRequest) (sdk.CloseSessionResponse, error) {
	return sdk.CloseSessionResponse{}, nil
}

func (f *fake) ListSessions(ctx context.Context, _ sdk.ListSessionsRequest) (sdk.ListSessionsResponse, error) {
	return sdk.ListSessionsResponse{}, nil
}

func (f *fake) ResumeSession(ctx context.Context, _ sdk.ResumeSessionRequest) (sdk.ResumeSessionResponse, error) {
	return sdk.ResumeSessionResponse{}, sdk.NewMethodNotFound("session/resume")
}

func (f *fake) SetSessionConfigOption(ctx context.Context, _ sdk.SetSessionConfigOptionRequest) (sdk.SetSessionConfigOptionResponse, error) {
	return sdk.SetSessionConfigOptionResponse{}, nil
}

func (f *fake) SetSessionMode(ctx context.Context, _ sdk.SetSessionModeRequest) (sdk.SetSessionModeResponse, error) {
	return sdk.SetSessionModeResponse{}, nil
}

func (f *fake) say(ctx context.Context, id sdk.SessionId, text string) {
	f.conn.SessionUpdate(ctx, sdk.SessionNotification{SessionId: id, Update: sdk.UpdateAgentMessageText(text)})
}

// callTool calls a tool of the session's MCP server and returns its text.
func (f *fake) callTool(ctx context.Context, s *fakeSession, name string, args map[string]any) (string, error) {
	if s.url == "" {
		return "", errors.New("no MCP server was given")
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "fake", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.url, DisableStandaloneSSE: true}, nil)
	if err != nil {
		return "", err
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		return "", err
	}
	var text string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text += tc.Text
		}
	}
	if res.IsError {
		return "", errors.New(text)
	}
	return text, nil
}

// listTools lists the tools of the session's MCP server, sorted.
func (f *fake) listTools(ctx context.Context, s *fakeSession) ([]string, error) {
	if s.url == "" {
		return nil, errors.New("no MCP server was given")
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "fake", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.url, DisableStandaloneSSE: true}, nil)
	if err != nil {
		return nil, err
	}
	defer cs.Close()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, t := range res.Tools {
		names = append(names, t.Name)
	}
	sort.Strings(names)
	return names, nil
}

func (f *fake) Prompt(ctx context.Context, p sdk.PromptRequest) (sdk.PromptResponse, error) {
	s := f.session(p.SessionId)
	if s == nil {
		return sdk.PromptResponse{}, sdk.NewInvalidParams("no such session")
	}
	if os.Getenv(IgnoreCancelEnv) == "1" {
		f.prompting.Lock()
		defer f.prompting.Unlock()
		ctx = context.WithoutCancel(ctx) // the SDK cancels a prompt's context on session/cancel
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	f.mu.Lock()
	s.cancel = cancel
	f.mu.Unlock()
	var text string
	for _, b := range p.Prompt {
		if b.Text != nil {
			text += b.Text.Text
		}
	}
	words := text
	if i := strings.LastIndex(words, "</context>\n"); i >= 0 {
		words = words[i+len("</context>\n"):]
	} else if i := strings.LastIndex(words, "\n\n"); i >= 0 {
		words = words[i+2:] // after the system prompt
	}
	verb, rest, _ := strings.Cut(strings.TrimSpace(words), " ")
	if verb == "expand" {
		verb, rest, _ = strings.Cut(os.ExpandEnv(rest), " ")
	}
	for verb == "stderr" || verb == "stdout" || verb == "debuglog" {
		text, next, _ := strings.Cut(rest, " then ")
		switch verb {
		case "stderr":
			fmt.Fprintln(os.Stderr, lines(text))
		case "stdout":
			fmt.Fprintln(os.Stdout, lines(text))
		default:
			debugLog(text)
		}
		if next == "" {
			next = "silent"
		}
		verb, rest, _ = strings.Cut(next, " ")
	}
	end := sdk.PromptResponse{StopReason: sdk.StopReasonEndTurn}
	say := func(t string) { f.say(ctx, p.SessionId, t) }
	post := func(t string) (sdk.PromptResponse, error) {
		if _, err := f.callTool(ctx, s, postMessage, map[string]any{"text": t}); err != nil {
			say("post failed: " + err.Error())
		}
		return end, nil
	}
	switch verb {
	case "say":
		f.conn.SessionUpdate(ctx, sdk.SessionNotification{SessionId: p.SessionId, Update: sdk.UpdateAgentThoughtText("thinking")})
		f.conn.SessionUpdate(ctx, sdk.SessionNotification{SessionId: p.SessionId, Update: sdk.StartToolCall("t1", "Reading notes",
			sdk.WithStartKind(sdk.ToolKindRead), sdk.WithStartStatus(sdk.ToolCallStatusInProgress))})
		f.conn.SessionUpdate(ctx, sdk.SessionNotification{SessionId: p.SessionId, Update: sdk.UpdateToolCall("t1",
			sdk.WithUpdateStatus(sdk.ToolCallStatusCompleted))})
		half := len(rest) / 2
		say(rest[:half])
		say(rest[half:])
		return end, nil
	case "post":
		return post(rest)
	case "ask":
		answer, err := f.callTool(ctx, s, askQuestion, map[string]any{"question": rest})
		if err != nil {
			return post("ask failed: " + err.Error())
		}
		return post("you said: " + answer)
	case "permit":
		resp, err := f.conn.RequestPermission(ctx, sdk.RequestPermissionRequest{
			SessionId: p.SessionId,
			ToolCall:  sdk.ToolCallUpdate{ToolCallId: "p1", Title: sdk.Ptr("Edit notes.md"), Kind: sdk.Ptr(sdk.ToolKindEdit), RawInput: map[string]any{"path": "notes.md"}},
			Options: []sdk.PermissionOption{
				{Kind: sdk.PermissionOptionKindAllowOnce, Name: "Allow", OptionId: "yes"},
				{Kind: sdk.PermissionOptionKindRejectOnce, Name: "Reject", OptionId: "no"},
			},
		})
		switch {
		case err != nil:
			return post("permission failed: " + err.Error())
		case resp.Outcome.Selected != nil && resp.Outcome.Selected.OptionId == "yes":
			return post("allowed")
		case resp.Outcome.Selected != nil:
			return post("rejected")
		}
		return post("cancelled")
	case "read":
		r, err := f.conn.ReadTextFile(ctx, sdk.ReadTextFileRequest{SessionId: p.SessionId, Path: rest})
		if err != nil {
			say("refused: " + err.Error())
		} else {
			say(r.Content)
		}
		return end, nil
	case "write":
		path, content, _ := strings.Cut(rest, " ")
		if _, err := f.conn.WriteTextFile(ctx, sdk.WriteTextFileRequest{SessionId: p.SessionId, Path: path, Content: content}); err != nil {
			say("refused: " + err.Error())
		} else {
			say("wrote")
		}
		return end, nil
	case "sleep":
		say("sleeping")
		<-ctx.Done()
		return sdk.PromptResponse{StopReason: sdk.StopReasonCancelled}, nil
	case "hang":
		say("hanging")
		<-make(chan struct{})
	case "silent":
		<-ctx.Done()
		return sdk.PromptResponse{StopReason: sdk.StopReasonCancelled}, nil
	case "tick":
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return sdk.PromptResponse{StopReason: sdk.StopReasonCancelled}, nil
			case <-t.C:
				say("tick")
			}
		}
	case "exit":
		n, _ := strconv.Atoi(rest)
		os.Exit(n)
	case "signal":
		if p, err := os.FindProcess(os.Getpid()); err == nil {
			p.Kill()
		}
		<-make(chan struct{})
	case "system":
		if s.system == "" {
			say("system: none")
		} else {
			say("system: " + s.system)
		}
		return end, nil
	case "traceparent":
		if tp, ok := p.Meta["traceparent"].(string); ok {
			say("traceparent: " + tp)
		} else {
			say("traceparent: none")
		}
		return end, nil
	case "crash":
		os.Exit(3)
	case "signedout":
		return sdk.PromptResponse{}, sdk.NewAuthRequired(nil)
	case "fail":
		return sdk.PromptResponse{}, &sdk.RequestError{Code: -32603, Message: rest}
	case "stop":
		return sdk.PromptResponse{StopReason: sdk.StopReason(rest)}, nil
	case "pid":
		say(fmt.Sprintf("pid %d", os.Getpid()))
		return end, nil
	case "env":
		env := os.Environ()
		sort.Strings(env)
		say(strings.Join(env, "\n"))
		return end, nil
	case "session":
		say(fmt.Sprintf("session %s loaded=%v", s.id, s.loaded))
		return end, nil
	case "prompt":
		say(text)
		return end, nil
	case "call":
		name, raw, _ := strings.Cut(rest, " ")
		args := map[string]any{}
		if strings.TrimSpace(raw) != "" {
			if err := json.Unmarshal([]byte(raw), &args); err != nil {
				return post("tool failed: " + err.Error())
			}
		}
		out, err := f.callTool(ctx, s, name, args)
		if err != nil {
			return post("tool failed: " + err.Error())
		}
		return post("tool: " + out)
	case "post-tools":
		names, err := f.listTools(ctx, s)
		if err != nil {
			return post("tools failed: " + err.Error())
		}
		return post(strings.Join(names, ","))
	case "tool":
		name, raw, _ := strings.Cut(rest, " ")
		args := map[string]any{}
		if strings.TrimSpace(raw) != "" {
			if err := json.Unmarshal([]byte(raw), &args); err != nil {
				say("tool failed: " + err.Error())
				return end, nil
			}
		}
		out, err := f.callTool(ctx, s, name, args)
		if err != nil {
			say("tool failed: " + err.Error())
		} else {
			say("tool: " + out)
		}
		return end, nil
	case "terminal", "background":
		fields := strings.Fields(rest)
		var cwd *string
		if verb == "terminal" && len(fields) > 0 {
			if fields[0] != "-" {
				cwd = &fields[0]
			}
			fields = fields[1:]
		}
		if len(fields) == 0 {
			say("refused: no command")
			return end, nil
		}
		tr, err := f.conn.CreateTerminal(ctx, sdk.CreateTerminalRequest{SessionId: p.SessionId, Command: fields[0], Args: fields[1:], Cwd: cwd})
		if err != nil {
			say("refused: " + err.Error())
			return end, nil
		}
		if verb == "background" {
			say("started " + tr.TerminalId)
			return end, nil
		}
		ex, err := f.conn.WaitForTerminalExit(ctx, sdk.WaitForTerminalExitRequest{SessionId: p.SessionId, TerminalId: tr.TerminalId})
		if err != nil {
			say("wait failed: " + err.Error())
			return end, nil
		}
		out, err := f.conn.TerminalOutput(ctx, sdk.TerminalOutputRequest{SessionId: p.SessionId, TerminalId: tr.TerminalId})
		if err != nil {
			say("output failed: " + err.Error())
			return end, nil
		}
		if _, err := f.conn.ReleaseTerminal(ctx, sdk.ReleaseTerminalRequest{SessionId: p.SessionId, TerminalId: tr.TerminalId}); err != nil {
			say("release failed: " + err.Error())
			return end, nil
		}
		code := -1
		if ex.ExitCode != nil {
			code = *ex.ExitCode
		}
		say(fmt.Sprintf("exit %d: %s", code, out.Output))
		return end, nil
	case "shell":
		tr, err := f.conn.CreateTerminal(ctx, sdk.CreateTerminalRequest{SessionId: p.SessionId, Command: "sh", Args: []string{"-c", rest}})
		if err != nil {
			return post("refused: " + err.Error())
		}
		ex, err := f.conn.WaitForTerminalExit(ctx, sdk.WaitForTerminalExitRequest{SessionId: p.SessionId, TerminalId: tr.TerminalId})
		if err != nil {
			return post("wait failed: " + err.Error())
		}
		out, err := f.conn.TerminalOutput(ctx, sdk.TerminalOutputRequest{SessionId: p.SessionId, TerminalId: tr.TerminalId})
		if err != nil {
			return post("output failed: " + err.Error())
		}
		f.conn.ReleaseTerminal(ctx, sdk.ReleaseTerminalRequest{SessionId: p.SessionId, TerminalId: tr.TerminalId})
		code := -1
		if ex.ExitCode != nil {
			code = *ex.ExitCode
		}
		return post(fmt.Sprintf("exit %d: %s", code, out.Output))
	case "probe":
		n, err := probe(rest)
		if err != nil {
			return post("refused: " + err.Error())
		}
		return post(fmt.Sprintf("read %d bytes", n))
	case "dial":
		d := net.Dialer{Timeout: 5 * time.Second}
		c, err := d.DialContext(ctx, "tcp", rest)
		if err != nil {
			return post("refused: " + err.Error())
		}
		c.Close()
		return post("connected")
	case "probe-write":
		if err := os.WriteFile(rest, []byte("probe"), 0o644); err != nil {
			return post("refused: " + err.Error())
		}
		return post("wrote")
	case "tools":
		names, err := f.listTools(ctx, s)
		if err != nil {
			say("tools failed: " + err.Error())
		} else {
			say(strings.Join(names, ","))
		}
		return end, nil
	}
	say("unknown: " + words)
	return end, nil
}

// probe reads the file at path, or lists the folder, and returns how many
// bytes (or entries) it got.
func probe(path string) (int, error) {
	st, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	if st.IsDir() {
		entries, err := os.ReadDir(path)
		return len(entries), err
	}
	data, err := os.ReadFile(path)
	return len(data), err
}
