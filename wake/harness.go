package wake

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/agenthost/bots/transport/ahp"
)

// ErrDenied is returned by Work.CallTool for a tool the session's deny list
// refuses.
var ErrDenied = errors.New("the tool is denied to this session")

// Harness runs the back sessions of one agent provider: echo, or an ACP
// agent. LocalHost opens one Agent per session and runs its turns one at a
// time.
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

// Work is what an agent does a turn through. Its methods are for the
// turn's own goroutine; after Turn returns they do nothing.
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
