package wake

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"

	"github.com/agenthost/bots/ahp"
)

// ErrDenied is returned by Work.CallTool for a tool the session's deny list
// refuses.
var ErrDenied = errors.New("the tool is denied to this session")

// Harness runs the back sessions of one agent provider: echo, or an ACP
// agent. A session host (wake/local's Host) opens one Agent per session
// and runs its turns one at a time.
type Harness interface {
	// Open starts the agent of one session. An error refuses the session's
	// start.
	Open(ctx context.Context, s SessionInfo) (Agent, error)
}

// SessionInfo is what a harness knows of the session it runs.
type SessionInfo struct {
	// URI is the session's URI.
	URI string
	// Provider is the agent provider and Model the model asked for ("" is
	// the provider's default).
	Provider, Model string
	// Dir is the folder the agent works in; its AGENTS.md is the bot's
	// rules.
	Dir string
	// Title is the session's title.
	Title string
	// SystemPrompt is what the agent is told before any message.
	SystemPrompt string
	// Tools are the tools the session's client provides, which Work.CallTool
	// calls.
	Tools []ahp.ToolDefinition
	// Owner is whose session it is (user:<id> or root:<host>): for a back
	// session, the person whose messages it answers.
	Owner string
	// Meta is the session's _meta, as Spec.Meta gave it; a back session's
	// holds BackSessionMeta.
	Meta map[string]any
	// Gate says which tools the session may hold and calls the workspace
	// tools (see ToolGate); nil when its host has none, and then the
	// session holds what DefaultToolPolicy gives a bot that lists none.
	Gate ToolGate
}

// BackSessionMeta is the _meta key of a back session started by the Waker:
// {"bot": <bot id>, "person": <owner string>, "name": <session name>,
// "created": <the bot's creation, Unix milliseconds in decimal>}. A bot
// made again with a deleted one's slug has another "created".
const BackSessionMeta = "ahpd.backSession"

// BackSessionCreated returns the "created" of a back session's _meta (see
// BackSessionMeta): digits alone, "0" when meta has none.
func BackSessionCreated(meta map[string]any) string {
	m, _ := meta[BackSessionMeta].(map[string]any)
	created, _ := m["created"].(string)
	if created == "" || strings.Trim(created, "0123456789") != "" {
		return "0"
	}
	return created
}

// SessionFolders is implemented by session hosts that can say which
// folder a session they hold works in, so that the Waker never carries
// on a back session in a folder other than its bot's.
type SessionFolders interface {
	// SessionFolder returns the folder session works in; ok is false when
	// the host does not hold it.
	SessionFolder(session string) (dir string, ok bool)
}

// BotForgetter is implemented by session hosts and harnesses that keep
// something of a bot's own besides its sessions (an agent's HOME, say),
// so that what they keep goes with the bot when it is deleted.
type BotForgetter interface {
	// ForgetBot removes what is kept of bot, a deleted bot's slug.
	ForgetBot(ctx context.Context, bot string) error
}

// BackSession returns the bot, person and session name of a back session's
// _meta; ok is false when meta names none.
func BackSession(meta map[string]any) (bot, person, name string, ok bool) {
	m, _ := meta[BackSessionMeta].(map[string]any)
	if m == nil {
		return "", "", "", false
	}
	bot, _ = m["bot"].(string)
	person, _ = m["person"].(string)
	name, _ = m["name"].(string)
	return bot, person, name, bot != ""
}

// BackSessionRoute returns the route a back session runs the turns of (see
// Message.Route), "" for none.
func BackSessionRoute(meta map[string]any) string {
	m, _ := meta[BackSessionMeta].(map[string]any)
	r, _ := m["route"].(string)
	return r
}

// RoutedName is the name of the back session a route's turns run in: the
// bot's session name, cut to leave room, and a digest of the route's id,
// so that a routed chat never shares a back session (nor its tools) with
// the person's other chats with the bot. It is a session name as
// record.FillSessionName gives one.
func RoutedName(name, route string) string {
	sum := sha256.Sum256([]byte(route))
	if len(name) > 28 {
		name = strings.TrimRight(name[:28], "-")
	}
	return name + "-r" + hex.EncodeToString(sum[:4])
}

// Agent is one session's agent.
type Agent interface {
	// Turn runs one turn, doing its work through w, and returns when the
	// turn ends. An error fails the turn with its message. ctx ends when
	// the turn is stopped; the agent should then return promptly.
	Turn(ctx context.Context, w Work) error
	// Close ends the agent. It is called once, when the session is
	// disposed or the host closes.
	Close() error
}

// Work is what an agent does a turn through. Its methods, and those of the
// optional interfaces Reasoner and ToolReporter, may be called concurrently,
// from any goroutine, while Turn runs (an agent's tool server answers calls
// on goroutines of its own); after Turn returns they do nothing.
type Work interface {
	// TurnID is the turn's id.
	TurnID() string
	// Message is the message the turn answers.
	Message() ahp.Message
	// Reply streams text of the turn's own reply: its final text.
	Reply(text string)
	// CallTool calls a tool the session's client provides (post_message)
	// and returns its result. A tool on the deny list is ErrDenied; ctx's
	// end abandons the call.
	CallTool(ctx context.Context, name string, input json.RawMessage) (ahp.ToolCallResult, error)
	// Ask asks questions with the question tool and returns how the person
	// answered: accept with answers by question id, decline or cancel.
	Ask(ctx context.Context, questions []ahp.ChatInputQuestion) (ahp.InputResponse, map[string]ahp.ChatInputAnswer, error)
	// Approve asks approval for a tool call and reports whether it was
	// given; an approved call is completed as run.
	Approve(ctx context.Context, a Approval) (bool, error)
}

// Approval is a tool call waiting for a confirmation.
type Approval struct {
	// ToolName and DisplayName name the tool.
	ToolName, DisplayName string
	// Invocation says what the call will do.
	Invocation string
	// Input is the call's input, as text.
	Input string
}

// Reasoner is an optional interface of a Work that shows an agent's
// reasoning: the agent streams its thoughts to it.
type Reasoner interface {
	// Reason streams text of the turn's reasoning.
	Reason(text string)
}

// ToolReporter is an optional interface of a Work that shows the calls of
// the agent's own tools (reading, editing, running…) and their status.
type ToolReporter interface {
	// ReportTool reports a call's start or a change of it; fields of an
	// update that did not change are empty.
	ReportTool(r ToolReport)
}

// Notifier is an optional interface of a Work that shows a notice of the
// harness in the turn, apart from the agent's reply: one sentence a person
// reads about the session itself ("… could not continue the earlier
// session; this one starts afresh"). The Waker shows it in the main turn
// too.
type Notifier interface {
	// Notify shows text in the turn.
	Notify(text string)
}

// Tool call statuses of a ToolReport.
const (
	ToolPending    = "pending"
	ToolInProgress = "in_progress"
	ToolCompleted  = "completed"
	ToolFailed     = "failed"
)

// ToolReport is a call of one of the agent's own tools, as it stands.
type ToolReport struct {
	// ID identifies the call within the session.
	ID string
	// Title says what the call does; Kind is the kind of tool (ACP's read,
	// edit, execute…).
	Title, Kind string
	// Status is ToolPending, ToolInProgress, ToolCompleted or ToolFailed.
	Status string
	// Input and Output are the call's raw input and output as JSON.
	Input, Output string
	// Started is true for the call's first report.
	Started bool
}
