package ahp

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"
)

// RootURI is the URI of the root channel, also the channel of every
// connection-level command.
const RootURI = "ahp-root://"

// DefaultChatURI returns the URI VS Code computes for a session's default
// chat: ahp-chat://default/ followed by the session URI in unpadded
// base64url. Hosts announce the default chat under exactly this URI.
func DefaultChatURI(sessionURI string) string {
	return "ahp-chat://default/" + base64.RawURLEncoding.EncodeToString([]byte(sessionURI))
}

// FormatTime formats t the way the protocol writes timestamps: ISO 8601 in
// UTC with exactly three fractional digits and a Z suffix.
func FormatTime(t time.Time) string {
	return t.UTC().Format(timeLayout)
}

const timeLayout = "2006-01-02T15:04:05.000Z"

// List is a JSON array that is never encoded as null: a nil List encodes as
// []. Fields the protocol requires to be arrays use it; optional arrays are
// plain slices tagged omitzero.
type List[T any] []T

// MarshalJSON encodes l, or [] when l is nil.
func (l List[T]) MarshalJSON() ([]byte, error) {
	if l == nil {
		return []byte("[]"), nil
	}
	return json.Marshal([]T(l))
}

// StringOrMarkdown is a text that is either plain or Markdown. Plain text is
// encoded as a JSON string, Markdown as {"markdown": "…"}. The zero value is
// the empty plain string.
type StringOrMarkdown struct {
	// Text is the text itself.
	Text string
	// Markdown reports whether Text is Markdown.
	Markdown bool
}

// Plain returns plain text.
func Plain(s string) StringOrMarkdown { return StringOrMarkdown{Text: s} }

// Markdown returns Markdown text.
func Markdown(s string) StringOrMarkdown { return StringOrMarkdown{Text: s, Markdown: true} }

// MarshalJSON encodes s as a string or as {"markdown": …}.
func (s StringOrMarkdown) MarshalJSON() ([]byte, error) {
	if s.Markdown {
		return json.Marshal(struct {
			Markdown string `json:"markdown"`
		}{s.Text})
	}
	return json.Marshal(s.Text)
}

// UnmarshalJSON decodes a string or a {"markdown": …} object.
func (s *StringOrMarkdown) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	if len(data) > 0 && data[0] == '"' {
		*s = StringOrMarkdown{}
		return json.Unmarshal(data, &s.Text)
	}
	var m struct {
		Markdown string `json:"markdown"`
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return fmt.Errorf("string or markdown: %w", err)
	}
	*s = StringOrMarkdown{Text: m.Markdown, Markdown: true}
	return nil
}

// ErrorInfo describes an error: of a failed session, of a turn, of an MCP
// server.
type ErrorInfo struct {
	// ErrorType is a machine-readable kind, e.g. "executionInterrupted".
	ErrorType string `json:"errorType"`
	// Message is the human-readable message.
	Message string `json:"message"`
	// Stack is an optional stack trace.
	Stack string `json:"stack,omitempty"`
	// Meta is optional implementation metadata.
	Meta map[string]any `json:"_meta,omitzero"`
}

// UsageInfo reports the token usage of a turn.
type UsageInfo struct {
	// InputTokens is the number of input tokens, when known.
	InputTokens *int64 `json:"inputTokens,omitempty"`
	// OutputTokens is the number of output tokens, when known.
	OutputTokens *int64 `json:"outputTokens,omitempty"`
	// Model is the model that was used, when known.
	Model string `json:"model,omitempty"`
	// CacheReadTokens is the number of tokens read from a prompt cache.
	CacheReadTokens *int64 `json:"cacheReadTokens,omitempty"`
	// Meta is optional provider metadata.
	Meta map[string]any `json:"_meta,omitzero"`
}

// ContentRef refers to content stored outside the state tree, fetched with
// resourceRead.
type ContentRef struct {
	// URI is the content's URI.
	URI string `json:"uri"`
	// SizeHint is the approximate size in bytes.
	SizeHint *int64 `json:"sizeHint,omitempty"`
	// ContentType is the content's MIME type.
	ContentType string `json:"contentType,omitempty"`
	// Nonce is an optional content nonce.
	Nonce string `json:"nonce,omitempty"`
}

// TextPosition is a zero-based position within a text.
type TextPosition struct {
	// Line is the zero-based line.
	Line int64 `json:"line"`
	// Character is the zero-based character offset within the line.
	Character int64 `json:"character"`
}

// TextRange is a range within a text.
type TextRange struct {
	// Start is where the range starts.
	Start TextPosition `json:"start"`
	// End is where the range ends.
	End TextPosition `json:"end"`
}

// SessionStatus is the status bitset of a session or chat. The low five bits
// are the activity (Idle, Error, InProgress, InputNeeded); IsRead and
// IsArchived are orthogonal flags. Test it with masks, not equality.
type SessionStatus uint32

// SessionStatus flags.
const (
	// StatusIdle means no turn is active.
	StatusIdle SessionStatus = 1
	// StatusError means the last turn ended with an error.
	StatusError SessionStatus = 2
	// StatusInProgress means a turn is running.
	StatusInProgress SessionStatus = 8
	// StatusInputNeeded means a running turn waits for the user (it includes
	// StatusInProgress).
	StatusInputNeeded SessionStatus = 24
	// StatusIsRead means a client viewed the session or chat since its last
	// change.
	StatusIsRead SessionStatus = 32
	// StatusIsArchived means the session or chat is archived.
	StatusIsArchived SessionStatus = 64

	// statusActivityMask covers the activity bits.
	statusActivityMask SessionStatus = 1<<5 - 1
)

// Has reports whether every flag of f is set in s.
func (s SessionStatus) Has(f SessionStatus) bool { return s&f == f }

// Activity returns the activity bits of s (Idle, Error, InProgress or
// InputNeeded), without the orthogonal flags.
func (s SessionStatus) Activity() SessionStatus { return s & statusActivityMask }

// WithActivity returns s with its activity bits replaced by a, keeping the
// orthogonal flags.
func (s SessionStatus) WithActivity(a SessionStatus) SessionStatus {
	return s&^statusActivityMask | a&statusActivityMask
}

// MessageKind says who produced a message.
type MessageKind string

// Message kinds. Clients may only send MessageUser.
const (
	MessageUser               MessageKind = "user"
	MessageAgent              MessageKind = "agent"
	MessageTool               MessageKind = "tool"
	MessageAutomation         MessageKind = "automation"
	MessageSystemNotification MessageKind = "systemNotification"
)

// MessageOrigin says who produced a message.
type MessageOrigin struct {
	// Kind is the kind of producer.
	Kind MessageKind `json:"kind"`
}

// Message starts or steers a turn.
type Message struct {
	// Text is the message text.
	Text string `json:"text"`
	// Origin says who produced the message.
	Origin MessageOrigin `json:"origin"`
	// Attachments are files, selections and other context.
	Attachments []MessageAttachment `json:"attachments,omitzero"`
	// Model is the model the message was, or will be, sent with.
	Model *ModelSelection `json:"model,omitempty"`
	// Agent is the custom agent the message was, or will be, sent with.
	Agent *AgentSelection `json:"agent,omitempty"`
	// Meta is optional provider metadata (e.g. vscode.chat.delegation).
	Meta map[string]any `json:"_meta,omitzero"`
}

// UserMessage returns a message from the user with the given text.
func UserMessage(text string) Message {
	return Message{Text: text, Origin: MessageOrigin{Kind: MessageUser}}
}

// ModelSelection is a chosen model with its configuration values.
type ModelSelection struct {
	// ID is the model identifier.
	ID string `json:"id"`
	// Config holds model-specific configuration values.
	Config map[string]any `json:"config,omitzero"`
}

// AgentSelection selects a custom agent by URI.
type AgentSelection struct {
	// URI identifies the custom agent.
	URI string `json:"uri"`
}

// TextSelection is a selection within a textual resource.
type TextSelection struct {
	// Range is the selected range.
	Range TextRange `json:"range"`
}

// AttachmentType discriminates message attachments.
type AttachmentType string

// Attachment types.
const (
	AttachmentSimple           AttachmentType = "simple"
	AttachmentEmbeddedResource AttachmentType = "embeddedResource"
	AttachmentResource         AttachmentType = "resource"
	AttachmentAnnotations      AttachmentType = "annotations"
	AttachmentChat             AttachmentType = "chat"
)

// MessageAttachment is an attachment of a message. Type says which of the
// variant fields apply.
type MessageAttachment struct {
	// Type discriminates the attachment.
	Type AttachmentType `json:"type"`
	// Label is the attachment's display label.
	Label string `json:"label"`
	// Range is the range of Message.Text that refers to the attachment.
	Range *TextRange `json:"range,omitempty"`
	// DisplayKind is an advisory display hint ("image", "document", …).
	DisplayKind string `json:"displayKind,omitempty"`
	// Meta is implementation metadata; clients keep it as received.
	Meta map[string]any `json:"_meta,omitzero"`
	// ModelRepresentation is how a simple attachment is shown to the model.
	ModelRepresentation string `json:"modelRepresentation,omitempty"`
	// Data is the base64 data of an embeddedResource attachment.
	Data string `json:"data,omitempty"`
	// ContentType is the MIME type (embeddedResource, resource).
	ContentType string `json:"contentType,omitempty"`
	// URI is the content URI of a resource attachment.
	URI string `json:"uri,omitempty"`
	// SizeHint is the approximate size of a resource attachment.
	SizeHint *int64 `json:"sizeHint,omitempty"`
	// Nonce is the content nonce of a resource attachment.
	Nonce string `json:"nonce,omitempty"`
	// Selection is a selection within the attached textual resource.
	Selection *TextSelection `json:"selection,omitempty"`
	// Resource is the annotations channel or chat URI (annotations, chat).
	Resource string `json:"resource,omitempty"`
	// AnnotationIDs restricts an annotations attachment to some annotations.
	AnnotationIDs []string `json:"annotationIds,omitzero"`
	// EndTurn is the last turn a chat attachment includes.
	EndTurn string `json:"endTurn,omitempty"`
}

// field is one member of an object built by marshalObject.
type field struct {
	key   string
	value any
}

// marshalObject encodes fields as a JSON object, in order. It lets a type
// with a discriminator emit exactly the members its variant has.
func marshalObject(fields []field) ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range fields {
		if i > 0 {
			b.WriteByte(',')
		}
		k, err := json.Marshal(f.key)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(f.value)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f.key, err)
		}
		b.Write(k)
		b.WriteByte(':')
		b.Write(v)
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// withMember returns the JSON object obj with "key": value added in front.
// obj must be a JSON object.
func withMember(key string, value any, obj []byte) ([]byte, error) {
	k, err := json.Marshal(key)
	if err != nil {
		return nil, err
	}
	v, err := json.Marshal(value)
	if err != nil {
		return nil, err
	}
	obj = bytes.TrimSpace(obj)
	if len(obj) < 2 || obj[0] != '{' {
		return nil, fmt.Errorf("%s: not a JSON object", key)
	}
	var b bytes.Buffer
	b.WriteByte('{')
	b.Write(k)
	b.WriteByte(':')
	b.Write(v)
	rest := bytes.TrimSpace(obj[1:])
	if len(rest) > 0 && rest[0] != '}' {
		b.WriteByte(',')
	}
	b.Write(rest)
	return b.Bytes(), nil
}

// discriminator reads the string member key of a JSON object. A missing or
// non-string member reads as "".
func discriminator(data []byte, key string) (string, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(data, &m); err != nil {
		return "", err
	}
	raw, ok := m[key]
	if !ok {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", nil
	}
	return s, nil
}

// cloneRaw copies data so a decoded value does not alias the decoder's buffer.
func cloneRaw(data []byte) json.RawMessage {
	return append(json.RawMessage(nil), bytes.TrimSpace(data)...)
}
