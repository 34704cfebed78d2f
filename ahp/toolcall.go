package ahp

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// ToolCallStatus is the lifecycle status of a tool call. There is no failed
// status: a failed tool is completed with Success false.
type ToolCallStatus string

// Tool call statuses.
const (
	ToolCallStatusStreaming                 ToolCallStatus = "streaming"
	ToolCallStatusPendingConfirmation       ToolCallStatus = "pending-confirmation"
	ToolCallStatusRunning                   ToolCallStatus = "running"
	ToolCallStatusAuthRequired              ToolCallStatus = "auth-required"
	ToolCallStatusPendingResultConfirmation ToolCallStatus = "pending-result-confirmation"
	ToolCallStatusCompleted                 ToolCallStatus = "completed"
	ToolCallStatusCancelled                 ToolCallStatus = "cancelled"
)

// Terminal reports whether s is completed or cancelled.
func (s ToolCallStatus) Terminal() bool {
	return s == ToolCallStatusCompleted || s == ToolCallStatusCancelled
}

// ConfirmationReason says how a tool call was confirmed for execution.
type ConfirmationReason string

// Confirmation reasons.
const (
	ConfirmedNotNeeded  ConfirmationReason = "not-needed"
	ConfirmedUserAction ConfirmationReason = "user-action"
	ConfirmedSetting    ConfirmationReason = "setting"
)

// CancellationReason says why a tool call was cancelled.
type CancellationReason string

// Cancellation reasons.
const (
	CancelDenied       CancellationReason = "denied"
	CancelSkipped      CancellationReason = "skipped"
	CancelResultDenied CancellationReason = "result-denied"
)

// ToolCallContributor says who implements a tool: a client (Kind "client",
// ClientID) or an MCP server customization (Kind "mcp", CustomizationID).
type ToolCallContributor struct {
	// Kind is "client" or "mcp".
	Kind string `json:"kind"`
	// ClientID is the owning client of a client tool.
	ClientID string `json:"clientId,omitempty"`
	// CustomizationID is the MCP server customization of an MCP tool.
	CustomizationID string `json:"customizationId,omitempty"`
}

// Contributor kinds.
const (
	ContributorClient = "client"
	ContributorMCP    = "mcp"
)

// ToolInput is a tool call's final input: inline text, or a content reference
// when Ref is set.
type ToolInput struct {
	// Text is the inline input, used when Ref is nil.
	Text string
	// Ref refers to input stored outside the state tree.
	Ref *ContentRef
}

// MarshalJSON encodes t as a string or a content reference object.
func (t ToolInput) MarshalJSON() ([]byte, error) {
	if t.Ref != nil {
		return json.Marshal(t.Ref)
	}
	return json.Marshal(t.Text)
}

// UnmarshalJSON decodes a string or a content reference object.
func (t *ToolInput) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	*t = ToolInput{}
	if len(data) > 0 && data[0] == '"' {
		return json.Unmarshal(data, &t.Text)
	}
	var ref ContentRef
	if err := json.Unmarshal(data, &ref); err != nil {
		return fmt.Errorf("tool input: %w", err)
	}
	t.Ref = &ref
	return nil
}

// ConfirmationOption is a choice offered when a tool call asks for approval.
type ConfirmationOption struct {
	// ID identifies the option in chat/toolCallConfirmed.
	ID string `json:"id"`
	// Label is the option's display label.
	Label string `json:"label"`
	// Kind is "approve" or "deny".
	Kind string `json:"kind"`
	// Group is the option's display group.
	Group *int64 `json:"group,omitempty"`
}

// ToolError describes why a tool failed.
type ToolError struct {
	// Message is the error message.
	Message string `json:"message"`
	// Code is an optional error code.
	Code string `json:"code,omitempty"`
}

// ToolCallResult is the outcome of a tool's execution.
type ToolCallResult struct {
	// Success reports whether the tool succeeded.
	Success bool `json:"success"`
	// PastTenseMessage says what the tool did.
	PastTenseMessage StringOrMarkdown `json:"pastTenseMessage"`
	// Content holds unstructured result blocks (MCP CallToolResult.content).
	Content []ToolResultContent `json:"content,omitzero"`
	// StructuredContent is an optional structured result object.
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
	// Error tells why the tool failed.
	Error *ToolError `json:"error,omitempty"`
}

// ToolResultContentType discriminates tool result content blocks.
type ToolResultContentType string

// Tool result content types.
const (
	ContentText             ToolResultContentType = "text"
	ContentEmbeddedResource ToolResultContentType = "embeddedResource"
	ContentResource         ToolResultContentType = "resource"
	ContentFileEdit         ToolResultContentType = "fileEdit"
	ContentTerminal         ToolResultContentType = "terminal"
	ContentSubagent         ToolResultContentType = "subagent"
)

// ToolResultContent is one content block of a tool result. Type says which
// of the variant fields apply.
type ToolResultContent struct {
	// Type discriminates the block.
	Type ToolResultContentType `json:"type"`
	// Text is the text of a text block.
	Text string `json:"text,omitempty"`
	// Data is the base64 data of an embeddedResource block.
	Data string `json:"data,omitempty"`
	// ContentType is the MIME type (embeddedResource, resource).
	ContentType string `json:"contentType,omitempty"`
	// URI is the content URI of a resource block.
	URI string `json:"uri,omitempty"`
	// SizeHint is the approximate size of a resource block.
	SizeHint *int64 `json:"sizeHint,omitempty"`
	// Nonce is the content nonce of a resource block.
	Nonce string `json:"nonce,omitempty"`
	// Before is the file before a fileEdit (absent for creations).
	Before json.RawMessage `json:"before,omitempty"`
	// After is the file after a fileEdit (absent for deletions).
	After json.RawMessage `json:"after,omitempty"`
	// Diff holds the diff statistics of a fileEdit.
	Diff json.RawMessage `json:"diff,omitempty"`
	// Resource is the terminal URI (terminal) or worker chat URI (subagent).
	Resource string `json:"resource,omitempty"`
	// Title is the display title (terminal, subagent).
	Title string `json:"title,omitempty"`
	// IsPty reports whether a terminal is a pseudoterminal.
	IsPty *bool `json:"isPty,omitempty"`
	// Result is the command outcome of a terminal block.
	Result json.RawMessage `json:"result,omitempty"`
	// AgentName is the internal agent name of a subagent block.
	AgentName string `json:"agentName,omitempty"`
	// Description describes a subagent's task.
	Description string `json:"description,omitempty"`
}

// TextContent returns a text content block.
func TextContent(text string) ToolResultContent {
	return ToolResultContent{Type: ContentText, Text: text}
}

// MarshalJSON encodes c, always emitting the members its type requires even
// when they are empty.
func (c ToolResultContent) MarshalJSON() ([]byte, error) {
	type plain ToolResultContent
	b, err := json.Marshal(plain(c))
	if err != nil {
		return nil, err
	}
	switch c.Type {
	case ContentText:
		if c.Text == "" {
			return withMember("text", "", b)
		}
	case ContentTerminal, ContentSubagent:
		if c.Title == "" {
			return withMember("title", "", b)
		}
	}
	return b, nil
}

// ToolCallState is the state of one tool call. It is one struct for the whole
// lifecycle: Status says which fields are part of the state, and MarshalJSON
// emits exactly those, always including the ones the status requires.
//
// Fields by status (besides the common ToolCallID, ToolName, DisplayName,
// Intention, Contributor and Meta):
//
//   - streaming: PartialInput, InvocationMessage (optional)
//   - pending-confirmation: InvocationMessage, ToolInput, ConfirmationTitle,
//     RiskAssessment, Edits, Editable, Options
//   - running: InvocationMessage, ToolInput, Confirmed, SelectedOption, Content
//   - auth-required: as running, plus Auth
//   - pending-result-confirmation, completed: InvocationMessage, ToolInput,
//     Success, PastTenseMessage, Content, StructuredContent, Error, Confirmed,
//     SelectedOption
//   - cancelled: InvocationMessage, ToolInput, Reason, ReasonMessage,
//     UserSuggestion, SelectedOption
type ToolCallState struct {
	// Status is the lifecycle status.
	Status ToolCallStatus `json:"status"`
	// ToolCallID identifies the call; it is also the id of its response part.
	ToolCallID string `json:"toolCallId"`
	// ToolName is the internal tool name.
	ToolName string `json:"toolName"`
	// DisplayName is the human-readable tool name.
	DisplayName string `json:"displayName"`
	// Intention says what the invocation intends to do.
	Intention string `json:"intention,omitempty"`
	// Contributor says who implements the tool; nil for server tools.
	Contributor *ToolCallContributor `json:"contributor,omitempty"`
	// Meta is provider metadata (e.g. ptyTerminal, ui).
	Meta map[string]any `json:"_meta,omitzero"`

	// PartialInput accumulates streamed parameters (streaming).
	PartialInput *string `json:"partialInput,omitempty"`
	// InvocationMessage describes what the tool does or what confirmation is
	// needed. Optional while streaming, required after.
	InvocationMessage *StringOrMarkdown `json:"invocationMessage,omitempty"`
	// ToolInput is the final input.
	ToolInput *ToolInput `json:"toolInput,omitempty"`

	// ConfirmationTitle is the short title of the confirmation prompt.
	ConfirmationTitle *StringOrMarkdown `json:"confirmationTitle,omitempty"`
	// RiskAssessment is the model judge's assessment, kept opaque.
	RiskAssessment json.RawMessage `json:"riskAssessment,omitempty"`
	// Edits are the file edits the call will make ({items: FileEdit[]}),
	// kept opaque.
	Edits json.RawMessage `json:"edits,omitempty"`
	// Editable reports whether the client may edit the input before
	// confirming.
	Editable *bool `json:"editable,omitempty"`
	// Options are the confirmation choices offered.
	Options []ConfirmationOption `json:"options,omitzero"`

	// Confirmed says how the call was confirmed.
	Confirmed ConfirmationReason `json:"confirmed,omitempty"`
	// SelectedOption is the confirmation option the user chose.
	SelectedOption *ConfirmationOption `json:"selectedOption,omitempty"`
	// Content is the partial content of a running call or the result content
	// of a finished one.
	Content []ToolResultContent `json:"content,omitzero"`
	// Auth is the MCP authentication challenge (auth-required), kept opaque.
	Auth json.RawMessage `json:"auth,omitempty"`

	// Success reports whether the tool succeeded.
	Success bool `json:"success,omitempty"`
	// PastTenseMessage says what the tool did.
	PastTenseMessage StringOrMarkdown `json:"pastTenseMessage,omitzero"`
	// StructuredContent is the structured result object.
	StructuredContent json.RawMessage `json:"structuredContent,omitempty"`
	// Error tells why the tool failed.
	Error *ToolError `json:"error,omitempty"`

	// Reason says why the call was cancelled.
	Reason CancellationReason `json:"reason,omitempty"`
	// ReasonMessage explains the cancellation.
	ReasonMessage *StringOrMarkdown `json:"reasonMessage,omitempty"`
	// UserSuggestion is what the user suggested doing instead.
	UserSuggestion *Message `json:"userSuggestion,omitempty"`

	// raw is the JSON of a call whose status this package does not know.
	raw json.RawMessage
}

// MarshalJSON encodes the members of t's status.
func (t ToolCallState) MarshalJSON() ([]byte, error) {
	if t.raw != nil && !t.known() {
		return t.raw, nil
	}
	fs := []field{
		{"status", t.Status},
		{"toolCallId", t.ToolCallID},
		{"toolName", t.ToolName},
		{"displayName", t.DisplayName},
	}
	opt := func(ok bool, key string, v any) {
		if ok {
			fs = append(fs, field{key, v})
		}
	}
	opt(t.Intention != "", "intention", t.Intention)
	opt(t.Contributor != nil, "contributor", t.Contributor)
	opt(t.Meta != nil, "_meta", t.Meta)
	invocation := func() {
		if t.InvocationMessage != nil {
			fs = append(fs, field{"invocationMessage", t.InvocationMessage})
		} else {
			fs = append(fs, field{"invocationMessage", ""})
		}
		opt(t.ToolInput != nil, "toolInput", t.ToolInput)
	}
	confirmed := func() {
		fs = append(fs, field{"confirmed", t.Confirmed})
		opt(t.SelectedOption != nil, "selectedOption", t.SelectedOption)
	}
	switch t.Status {
	case ToolCallStatusStreaming:
		opt(t.PartialInput != nil, "partialInput", t.PartialInput)
		opt(t.InvocationMessage != nil, "invocationMessage", t.InvocationMessage)
	case ToolCallStatusPendingConfirmation:
		invocation()
		opt(t.ConfirmationTitle != nil, "confirmationTitle", t.ConfirmationTitle)
		opt(t.RiskAssessment != nil, "riskAssessment", t.RiskAssessment)
		opt(t.Edits != nil, "edits", t.Edits)
		opt(t.Editable != nil, "editable", t.Editable)
		opt(t.Options != nil, "options", t.Options)
	case ToolCallStatusRunning, ToolCallStatusAuthRequired:
		invocation()
		confirmed()
		if t.Status == ToolCallStatusAuthRequired {
			auth := t.Auth
			if auth == nil {
				auth = json.RawMessage("{}")
			}
			fs = append(fs, field{"auth", auth})
		}
		opt(t.Content != nil, "content", t.Content)
	case ToolCallStatusPendingResultConfirmation, ToolCallStatusCompleted:
		invocation()
		fs = append(fs, field{"success", t.Success}, field{"pastTenseMessage", t.PastTenseMessage})
		opt(t.Content != nil, "content", t.Content)
		opt(t.StructuredContent != nil, "structuredContent", t.StructuredContent)
		opt(t.Error != nil, "error", t.Error)
		confirmed()
	case ToolCallStatusCancelled:
		invocation()
		fs = append(fs, field{"reason", t.Reason})
		opt(t.ReasonMessage != nil, "reasonMessage", t.ReasonMessage)
		opt(t.UserSuggestion != nil, "userSuggestion", t.UserSuggestion)
		opt(t.SelectedOption != nil, "selectedOption", t.SelectedOption)
	}
	return marshalObject(fs)
}

// UnmarshalJSON decodes a tool call of any status; one of an unknown status
// keeps its JSON and encodes back unchanged.
func (t *ToolCallState) UnmarshalJSON(data []byte) error {
	type plain ToolCallState
	var p plain
	if err := json.Unmarshal(data, &p); err != nil {
		return fmt.Errorf("tool call: %w", err)
	}
	*t = ToolCallState(p)
	if !t.known() {
		t.raw = cloneRaw(data)
	}
	return nil
}

func (t ToolCallState) known() bool {
	switch t.Status {
	case ToolCallStatusStreaming, ToolCallStatusPendingConfirmation, ToolCallStatusRunning, ToolCallStatusAuthRequired,
		ToolCallStatusPendingResultConfirmation, ToolCallStatusCompleted, ToolCallStatusCancelled:
		return true
	}
	return false
}

// blocking reports whether the call waits on the user: a confirmation, a
// result confirmation or an MCP authentication.
func (t *ToolCallState) blocking() bool {
	switch t.Status {
	case ToolCallStatusPendingConfirmation, ToolCallStatusPendingResultConfirmation, ToolCallStatusAuthRequired:
		return true
	}
	return false
}
