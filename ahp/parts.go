package ahp

import (
	"encoding/json"
	"fmt"
)

// Response part kinds.
const (
	PartMarkdown           = "markdown"
	PartContentRef         = "contentRef"
	PartToolCall           = "toolCall"
	PartReasoning          = "reasoning"
	PartSystemNotification = "systemNotification"
	PartInputRequest       = "inputRequest"
	PartError              = "error"
)

// ResponsePart is one part of a turn's response, in stream order. Exactly
// one field is set; Unknown holds the JSON of a part of a kind this package
// does not know, which encodes back unchanged.
type ResponsePart struct {
	// Markdown is a markdown text part, appended to with chat/delta.
	Markdown *MarkdownPart
	// ContentRef refers to large content stored outside the state tree.
	ContentRef *ContentRef
	// ToolCall is a tool call; its ToolCallID is the part's id.
	ToolCall *ToolCallState
	// Reasoning is reasoning text, appended to with chat/reasoning.
	Reasoning *ReasoningPart
	// SystemNotification is a harness notification shown in the transcript.
	SystemNotification *SystemNotificationPart
	// InputRequest is a question or elicitation, answered in place.
	InputRequest *InputRequestPart
	// Error is an error that ended (or paused) the turn.
	Error *ErrorPart
	// Unknown is the JSON of a part of an unknown kind.
	Unknown json.RawMessage
}

// MarkdownPart is a markdown text part.
type MarkdownPart struct {
	// ID is the part id chat/delta targets.
	ID string `json:"id"`
	// Content is the markdown text so far.
	Content string `json:"content"`
}

// ReasoningPart is a reasoning text part.
type ReasoningPart struct {
	// ID is the part id chat/reasoning targets.
	ID string `json:"id"`
	// Content is the reasoning text so far.
	Content string `json:"content"`
}

// SystemNotificationPart is a notification written by the agent harness.
type SystemNotificationPart struct {
	// Content is the notification text.
	Content StringOrMarkdown `json:"content"`
	// Meta describes what triggered the notification.
	Meta map[string]any `json:"_meta,omitzero"`
}

// InputRequestPart is an input request in the response stream. Response is
// empty until a client completes it.
type InputRequestPart struct {
	// Request is the request with its questions and answers so far.
	Request ChatInputRequest `json:"request"`
	// Response is "accept", "decline" or "cancel" once completed.
	Response InputResponse `json:"response,omitempty"`
}

// ErrorPart is an error in the response stream.
type ErrorPart struct {
	// Error describes the error.
	Error ErrorInfo `json:"error"`
	// Resumable reports whether chat/turnResume may reopen the turn.
	Resumable bool `json:"resumable,omitempty"`
}

// MarkdownResponse returns a markdown response part.
func MarkdownResponse(id, content string) ResponsePart {
	return ResponsePart{Markdown: &MarkdownPart{ID: id, Content: content}}
}

// ReasoningResponse returns a reasoning response part.
func ReasoningResponse(id, content string) ResponsePart {
	return ResponsePart{Reasoning: &ReasoningPart{ID: id, Content: content}}
}

// Kind returns the part's kind ("markdown", "toolCall", …), or the kind
// member of an unknown part.
func (p ResponsePart) Kind() string {
	switch {
	case p.Markdown != nil:
		return PartMarkdown
	case p.ContentRef != nil:
		return PartContentRef
	case p.ToolCall != nil:
		return PartToolCall
	case p.Reasoning != nil:
		return PartReasoning
	case p.SystemNotification != nil:
		return PartSystemNotification
	case p.InputRequest != nil:
		return PartInputRequest
	case p.Error != nil:
		return PartError
	case p.Unknown != nil:
		k, _ := discriminator(p.Unknown, "kind")
		return k
	}
	return ""
}

// id returns the id actions use to target the part: a markdown or reasoning
// part's id, a tool call's id; "" for others.
func (p ResponsePart) id() string {
	switch {
	case p.Markdown != nil:
		return p.Markdown.ID
	case p.Reasoning != nil:
		return p.Reasoning.ID
	case p.ToolCall != nil:
		return p.ToolCall.ToolCallID
	}
	return ""
}

// MarshalJSON encodes the part with its kind.
func (p ResponsePart) MarshalJSON() ([]byte, error) {
	var body any
	switch {
	case p.Markdown != nil:
		body = p.Markdown
	case p.ContentRef != nil:
		body = p.ContentRef
	case p.ToolCall != nil:
		body = struct {
			ToolCall *ToolCallState `json:"toolCall"`
		}{p.ToolCall}
	case p.Reasoning != nil:
		body = p.Reasoning
	case p.SystemNotification != nil:
		body = p.SystemNotification
	case p.InputRequest != nil:
		body = p.InputRequest
	case p.Error != nil:
		body = p.Error
	case p.Unknown != nil:
		return p.Unknown, nil
	default:
		return nil, fmt.Errorf("response part: no variant set")
	}
	b, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("response part %s: %w", p.Kind(), err)
	}
	return withMember("kind", p.Kind(), b)
}

// UnmarshalJSON decodes a part by its kind; a part of an unknown kind is kept
// in Unknown.
func (p *ResponsePart) UnmarshalJSON(data []byte) error {
	kind, err := discriminator(data, "kind")
	if err != nil {
		return fmt.Errorf("response part: %w", err)
	}
	*p = ResponsePart{}
	var target any
	switch kind {
	case PartMarkdown:
		p.Markdown = new(MarkdownPart)
		target = p.Markdown
	case PartContentRef:
		p.ContentRef = new(ContentRef)
		target = p.ContentRef
	case PartToolCall:
		var w struct {
			ToolCall ToolCallState `json:"toolCall"`
		}
		if err := json.Unmarshal(data, &w); err != nil {
			return fmt.Errorf("response part toolCall: %w", err)
		}
		p.ToolCall = &w.ToolCall
		return nil
	case PartReasoning:
		p.Reasoning = new(ReasoningPart)
		target = p.Reasoning
	case PartSystemNotification:
		p.SystemNotification = new(SystemNotificationPart)
		target = p.SystemNotification
	case PartInputRequest:
		p.InputRequest = new(InputRequestPart)
		target = p.InputRequest
	case PartError:
		p.Error = new(ErrorPart)
		target = p.Error
	default:
		p.Unknown = cloneRaw(data)
		return nil
	}
	if err := json.Unmarshal(data, target); err != nil {
		return fmt.Errorf("response part %s: %w", kind, err)
	}
	return nil
}

// InputResponse says how a client completed an input request.
type InputResponse string

// Input responses.
const (
	InputAccept  InputResponse = "accept"
	InputDecline InputResponse = "decline"
	InputCancel  InputResponse = "cancel"
)

// ChatInputRequest is a question or elicitation put to the user.
type ChatInputRequest struct {
	// ID identifies the request.
	ID string `json:"id"`
	// Message is the display message of the request as a whole.
	Message string `json:"message,omitempty"`
	// URL is a URL to review or open, for URL-style elicitations.
	URL string `json:"url,omitempty"`
	// Questions are the questions, in order.
	Questions []ChatInputQuestion `json:"questions,omitzero"`
	// Answers are the draft or submitted answers, by question id.
	Answers map[string]ChatInputAnswer `json:"answers,omitzero"`
}

// Question kinds.
const (
	QuestionText         = "text"
	QuestionNumber       = "number"
	QuestionInteger      = "integer"
	QuestionBoolean      = "boolean"
	QuestionSingleSelect = "single-select"
	QuestionMultiSelect  = "multi-select"
)

// ChatInputQuestion is one question of an input request. Kind says which of
// the variant fields apply.
type ChatInputQuestion struct {
	// ID identifies the question; it keys the answers.
	ID string `json:"id"`
	// Kind is the kind of control: text, number, integer, boolean,
	// single-select, multi-select.
	Kind string `json:"kind"`
	// Title is a short display title.
	Title string `json:"title,omitempty"`
	// Message is the prompt shown to the user.
	Message string `json:"message"`
	// Required reports whether accepting needs an answer to this question.
	Required *bool `json:"required,omitempty"`
	// Format is a format hint of a text question (email, uri, date, …).
	Format string `json:"format,omitempty"`
	// Min is a minimum (length, value or selected count).
	Min *float64 `json:"min,omitempty"`
	// Max is a maximum (length, value or selected count).
	Max *float64 `json:"max,omitempty"`
	// DefaultValue is the default answer value.
	DefaultValue any `json:"defaultValue,omitempty"`
	// Options are the choices of a select question.
	Options []ChatInputOption `json:"options,omitzero"`
	// AllowFreeformInput lets the user type instead of (or besides) choosing.
	AllowFreeformInput *bool `json:"allowFreeformInput,omitempty"`
}

// ChatInputOption is a choice of a select question.
type ChatInputOption struct {
	// ID identifies the option.
	ID string `json:"id"`
	// Label is the display label.
	Label string `json:"label"`
	// Description is optional secondary text.
	Description string `json:"description,omitempty"`
	// Recommended marks the recommended choice.
	Recommended *bool `json:"recommended,omitempty"`
}

// ChatInputAnswer is a draft, submitted or skipped answer to one question.
type ChatInputAnswer struct {
	// State is "draft", "submitted" or "skipped".
	State string `json:"state"`
	// Value is the answer's value (draft, submitted).
	Value *ChatInputAnswerValue `json:"value,omitempty"`
	// FreeformValues is text captured while skipping.
	FreeformValues []string `json:"freeformValues,omitzero"`
}

// ChatInputAnswerValue is the value of an answer. Kind is text, number,
// boolean, selected or selected-many; Value is a string, number, bool, string
// or list of strings accordingly.
type ChatInputAnswerValue struct {
	// Kind is the value kind.
	Kind string `json:"kind"`
	// Value is the value itself.
	Value any `json:"value"`
	// FreeformValues is text entered instead of, or besides, the options.
	FreeformValues []string `json:"freeformValues,omitzero"`
}
