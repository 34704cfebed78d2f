package ahp

import "encoding/json"

// RootState is the state of the root channel (ahp-root://).
type RootState struct {
	// Agents are the agent providers a session can be created with.
	Agents List[AgentInfo] `json:"agents"`
	// ActiveSessions is the number of active sessions.
	ActiveSessions *int64 `json:"activeSessions,omitempty"`
	// Terminals lists known terminals, kept opaque.
	Terminals []json.RawMessage `json:"terminals,omitzero"`
	// Config is the host configuration schema and values.
	Config *ConfigState `json:"config,omitempty"`
	// Meta is host metadata (hostBuild, ahpd.resourceProviders, …).
	Meta map[string]any `json:"_meta,omitzero"`
}

// ConfigState is a configuration schema with its current values.
type ConfigState struct {
	// Schema is the JSON Schema of the properties, kept opaque.
	Schema json.RawMessage `json:"schema"`
	// Values are the current values by property id.
	Values map[string]any `json:"values"`
}

// AgentInfo describes an agent provider.
type AgentInfo struct {
	// Provider is the id createSession names.
	Provider string `json:"provider"`
	// DisplayName is the human-readable name.
	DisplayName string `json:"displayName"`
	// Description describes the agent.
	Description string `json:"description"`
	// Models are the models the agent offers.
	Models List[SessionModelInfo] `json:"models"`
	// ProtectedResources are RFC 9728 resources the agent needs tokens for,
	// kept opaque.
	ProtectedResources []json.RawMessage `json:"protectedResources,omitzero"`
	// Customizations are the agent's customizations, kept opaque.
	Customizations []json.RawMessage `json:"customizations,omitzero"`
	// Capabilities are what the agent supports beyond the basics.
	Capabilities *AgentCapabilities `json:"capabilities,omitempty"`
}

// AgentCapabilities are an agent's optional capabilities; a present member
// (even empty) means supported.
type AgentCapabilities struct {
	// MultipleChats allows more than one chat per session.
	MultipleChats *MultipleChatsCapability `json:"multipleChats,omitempty"`
	// MultipleWorkingDirectories allows more than one working directory,
	// kept opaque.
	MultipleWorkingDirectories json.RawMessage `json:"multipleWorkingDirectories,omitempty"`
}

// MultipleChatsCapability are the options of the multipleChats capability.
type MultipleChatsCapability struct {
	// Fork allows forking a chat from a turn.
	Fork *bool `json:"fork,omitempty"`
	// SideChat allows side chats from a turn.
	SideChat *bool `json:"sideChat,omitempty"`
}

// SessionModelInfo describes a model an agent offers.
type SessionModelInfo struct {
	// ID identifies the model.
	ID string `json:"id"`
	// Provider is the agent provider owning the model.
	Provider string `json:"provider"`
	// Name is the human-readable name.
	Name string `json:"name"`
	// MaxContextWindow is the context window size.
	MaxContextWindow *int64 `json:"maxContextWindow,omitempty"`
	// MaxOutputTokens is the output token limit.
	MaxOutputTokens *int64 `json:"maxOutputTokens,omitempty"`
	// MaxPromptTokens is the prompt token limit.
	MaxPromptTokens *int64 `json:"maxPromptTokens,omitempty"`
	// SupportsVision reports image input support.
	SupportsVision *bool `json:"supportsVision,omitempty"`
	// PolicyState is "enabled", "disabled" or "unconfigured".
	PolicyState string `json:"policyState,omitempty"`
	// ConfigSchema describes model options, kept opaque.
	ConfigSchema json.RawMessage `json:"configSchema,omitempty"`
	// Meta is provider metadata (e.g. pricing).
	Meta map[string]any `json:"_meta,omitzero"`
	// Vendor is the model's vendor as the provider reports it.
	Vendor string `json:"vendor,omitempty"`
}

// SessionLifecycle is a session's initialization state.
type SessionLifecycle string

// Session lifecycles.
const (
	LifecycleCreating SessionLifecycle = "creating"
	LifecycleReady    SessionLifecycle = "ready"
	LifecycleFailed   SessionLifecycle = "failed"
)

// SessionMetadata holds the fields a session's state and its summary share.
type SessionMetadata struct {
	// Provider is the agent provider id.
	Provider string `json:"provider"`
	// Title is the session title.
	Title string `json:"title"`
	// Status is the status bitset.
	Status SessionStatus `json:"status"`
	// Activity says what the session is doing.
	Activity string `json:"activity,omitempty"`
	// Origin is the durable origin of the session, kept opaque.
	Origin json.RawMessage `json:"origin,omitempty"`
	// Project is the server-owned project of the session.
	Project *ProjectInfo `json:"project,omitempty"`
	// WorkingDirectories are the directories the agent may use.
	WorkingDirectories []string `json:"workingDirectories,omitzero"`
	// Annotations summarizes the annotations channel, kept opaque.
	Annotations json.RawMessage `json:"annotations,omitempty"`
}

// ProjectInfo is a session's project.
type ProjectInfo struct {
	// URI identifies the project.
	URI string `json:"uri"`
	// DisplayName is the project's name.
	DisplayName string `json:"displayName"`
}

// SessionState is the state of a session channel.
type SessionState struct {
	SessionMetadata
	// Lifecycle is the initialization state.
	Lifecycle SessionLifecycle `json:"lifecycle"`
	// CreationError tells why creation failed.
	CreationError *ErrorInfo `json:"creationError,omitempty"`
	// ServerTools are tools the host provides to the session.
	ServerTools []ToolDefinition `json:"serverTools,omitzero"`
	// ActiveClients are the clients providing tools to the session.
	ActiveClients List[SessionActiveClient] `json:"activeClients"`
	// Chats is the session's chat catalogue, in host order.
	Chats List[ChatSummary] `json:"chats"`
	// DefaultChat is the chat that receives input addressed to the session.
	DefaultChat string `json:"defaultChat,omitempty"`
	// Config is the session configuration schema and values.
	Config *ConfigState `json:"config,omitempty"`
	// Customizations are the session's customizations, kept opaque.
	Customizations []json.RawMessage `json:"customizations,omitzero"`
	// Changesets is the catalogue of changesets, kept opaque.
	Changesets []json.RawMessage `json:"changesets,omitzero"`
	// InputNeeded lists the input the session waits on, across its chats.
	InputNeeded []SessionInputRequest `json:"inputNeeded,omitzero"`
	// Meta is provider metadata (e.g. git).
	Meta map[string]any `json:"_meta,omitzero"`
}

// SessionSummary is a session's catalogue entry (listSessions, root
// notifications).
type SessionSummary struct {
	SessionMetadata
	// Resource is the session URI.
	Resource string `json:"resource"`
	// CreatedAt is the creation time (ISO 8601).
	CreatedAt string `json:"createdAt"`
	// ModifiedAt is the last modification time (ISO 8601).
	ModifiedAt string `json:"modifiedAt"`
	// Changes summarizes the file changes of the session.
	Changes *ChangesSummary `json:"changes,omitempty"`
	// Meta is lightweight presentation metadata.
	Meta map[string]any `json:"_meta,omitzero"`
	// Chats is a lightweight chat catalogue.
	Chats []SessionChatSummary `json:"chats,omitzero"`
	// DefaultChat is the chat that receives input addressed to the session.
	DefaultChat string `json:"defaultChat,omitempty"`
}

// SessionChatSummary is a chat's entry in a session summary.
type SessionChatSummary struct {
	// Resource is the chat URI.
	Resource string `json:"resource"`
	// Title is the chat title.
	Title string `json:"title"`
	// Origin says how the chat came to be.
	Origin *ChatOrigin `json:"origin,omitempty"`
	// Interactivity is "full", "read-only" or "hidden".
	Interactivity string `json:"interactivity,omitempty"`
	// Status is the chat's status, when the host provides it.
	Status *SessionStatus `json:"status,omitempty"`
	// Changes summarizes the chat's file changes.
	Changes *ChangesSummary `json:"changes,omitempty"`
}

// ChangesSummary counts file changes.
type ChangesSummary struct {
	// Additions is the number of inserted lines.
	Additions *int64 `json:"additions,omitempty"`
	// Deletions is the number of deleted lines.
	Deletions *int64 `json:"deletions,omitempty"`
	// Files is the number of changed files.
	Files *int64 `json:"files,omitempty"`
}

// PartialSessionSummary holds the changed fields of a
// root/sessionSummaryChanged notification; nil means unchanged.
type PartialSessionSummary struct {
	// Title is the new title.
	Title *string `json:"title,omitempty"`
	// Status is the new status.
	Status *SessionStatus `json:"status,omitempty"`
	// Activity is the new activity.
	Activity *string `json:"activity,omitempty"`
	// ModifiedAt is the new modification time.
	ModifiedAt *string `json:"modifiedAt,omitempty"`
	// WorkingDirectories is the new working directory set.
	WorkingDirectories []string `json:"workingDirectories,omitzero"`
	// Changes is the new change summary.
	Changes *ChangesSummary `json:"changes,omitempty"`
	// Meta is the new metadata.
	Meta map[string]any `json:"_meta,omitzero"`
	// Chats is the new chat catalogue.
	Chats []SessionChatSummary `json:"chats,omitzero"`
	// DefaultChat is the new default chat.
	DefaultChat *string `json:"defaultChat,omitempty"`
}

// ToolDefinition describes a tool offered to a session.
type ToolDefinition struct {
	// Name identifies the tool.
	Name string `json:"name"`
	// Title is the display name.
	Title string `json:"title,omitempty"`
	// Description says what the tool does.
	Description string `json:"description,omitempty"`
	// InputSchema is the JSON Schema of the input.
	InputSchema json.RawMessage `json:"inputSchema,omitempty"`
	// OutputSchema is the JSON Schema of the output.
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	// Annotations are MCP behavioural hints, kept opaque.
	Annotations json.RawMessage `json:"annotations,omitempty"`
	// Meta is provider metadata.
	Meta map[string]any `json:"_meta,omitzero"`
}

// SessionActiveClient is a client providing tools to a session.
type SessionActiveClient struct {
	// ClientID is the client's initialize clientId.
	ClientID string `json:"clientId"`
	// DisplayName is the client's name (e.g. "VS Code").
	DisplayName string `json:"displayName,omitempty"`
	// Tools are the tools the client provides.
	Tools List[ToolDefinition] `json:"tools"`
	// Customizations are the plugins the client contributes, kept opaque.
	Customizations []json.RawMessage `json:"customizations,omitzero"`
}

// Session input request kinds.
const (
	InputNeededChatInput           = "chatInput"
	InputNeededToolConfirmation    = "toolConfirmation"
	InputNeededToolClientExecution = "toolClientExecution"
	InputNeededToolAuthentication  = "toolAuthentication"
)

// SessionInputRequest is input a session waits on, mirrored from one of its
// chats. Kind says which of the variant fields apply: chatInput has Request;
// toolConfirmation and toolAuthentication have TurnID and ToolCall;
// toolClientExecution has TurnID, ClientID and ToolCall.
type SessionInputRequest struct {
	// Kind discriminates the entry.
	Kind string `json:"kind"`
	// ID is the entry's opaque key in the list.
	ID string `json:"id"`
	// Chat is the chat a client answers on.
	Chat string `json:"chat"`
	// Request is the mirrored chat input request (chatInput).
	Request *ChatInputRequest `json:"request,omitempty"`
	// TurnID is the turn of the tool call.
	TurnID string `json:"turnId,omitempty"`
	// ClientID is the client that should execute the tool
	// (toolClientExecution).
	ClientID string `json:"clientId,omitempty"`
	// ToolCall is the tool call waiting.
	ToolCall *ToolCallState `json:"toolCall,omitempty"`
}

// awaitsUser reports whether the entry waits on the user: every kind but
// toolClientExecution, which is work delegated to a client.
func (r SessionInputRequest) awaitsUser() bool {
	return r.Kind != InputNeededToolClientExecution
}

// Chat origin kinds.
const (
	ChatOriginUser     = "user"
	ChatOriginFork     = "fork"
	ChatOriginSideChat = "sideChat"
	ChatOriginTool     = "tool"
)

// ChatOrigin says how a chat came to be. Kind says which fields apply: fork
// has Chat and TurnID; sideChat has Chat, TurnID and Selection; tool has Chat
// and ToolCallID.
type ChatOrigin struct {
	// Kind is user, fork, sideChat or tool.
	Kind string `json:"kind"`
	// Chat is the source or parent chat.
	Chat string `json:"chat,omitempty"`
	// TurnID is the source turn.
	TurnID string `json:"turnId,omitempty"`
	// ToolCallID is the spawning tool call (tool).
	ToolCallID string `json:"toolCallId,omitempty"`
	// Selection is the text selected when a side chat was made.
	Selection *SideChatSelection `json:"selection,omitempty"`
}

// SideChatSelection is the text a side chat was made from.
type SideChatSelection struct {
	// Text is the selected text.
	Text string `json:"text"`
	// ResponsePartID is the part the text came from.
	ResponsePartID string `json:"responsePartId,omitempty"`
}

// ChatSummary is a chat's entry in its session's catalogue. ChatState
// embeds it.
type ChatSummary struct {
	// Resource is the chat URI.
	Resource string `json:"resource"`
	// Title is the chat title.
	Title string `json:"title"`
	// Status is the status bitset.
	Status SessionStatus `json:"status"`
	// Activity says what the chat is doing.
	Activity string `json:"activity,omitempty"`
	// ModifiedAt is the last modification time (ISO 8601).
	ModifiedAt string `json:"modifiedAt"`
	// Changes summarizes the chat's file changes.
	Changes *ChangesSummary `json:"changes,omitempty"`
	// Origin says how the chat came to be.
	Origin *ChatOrigin `json:"origin,omitempty"`
	// Movable reports whether moveChat may move the chat.
	Movable *bool `json:"movable,omitempty"`
	// Interactivity is "full", "read-only" or "hidden".
	Interactivity string `json:"interactivity,omitempty"`
	// WorkingDirectories is the chat's subset of the session's directories;
	// nil means all of them.
	WorkingDirectories []string `json:"workingDirectories,omitzero"`
}

// PartialChatSummary holds the changed fields of session/chatUpdated; nil
// means unchanged.
type PartialChatSummary struct {
	// Title is the new title.
	Title *string `json:"title,omitempty"`
	// Status is the new status.
	Status *SessionStatus `json:"status,omitempty"`
	// Activity is the new activity.
	Activity *string `json:"activity,omitempty"`
	// ModifiedAt is the new modification time.
	ModifiedAt *string `json:"modifiedAt,omitempty"`
	// Changes is the new change summary.
	Changes *ChangesSummary `json:"changes,omitempty"`
	// Origin is the new origin.
	Origin *ChatOrigin `json:"origin,omitempty"`
	// Movable is the new movability.
	Movable *bool `json:"movable,omitempty"`
	// Interactivity is the new interactivity.
	Interactivity *string `json:"interactivity,omitempty"`
	// WorkingDirectories is the new directory subset.
	WorkingDirectories []string `json:"workingDirectories,omitzero"`
}

// ChatState is the state of a chat channel. It embeds the chat's summary.
type ChatState struct {
	ChatSummary
	// Changesets is the chat's changeset catalogue, kept opaque.
	Changesets []json.RawMessage `json:"changesets,omitzero"`
	// BackgroundWork lists shells and subagents running in the background.
	BackgroundWork []BackgroundWork `json:"backgroundWork,omitzero"`
	// Canvases are the chat's canvas references, kept opaque.
	Canvases []json.RawMessage `json:"canvases,omitzero"`
	// Turns are the completed turns, oldest first.
	Turns List[Turn] `json:"turns"`
	// TurnsNextCursor is set when older turns can be fetched.
	TurnsNextCursor string `json:"turnsNextCursor,omitempty"`
	// ActiveTurn is the turn in progress.
	ActiveTurn *ActiveTurn `json:"activeTurn,omitempty"`
	// SteeringMessage is injected into the current turn when convenient.
	SteeringMessage *PendingMessage `json:"steeringMessage,omitempty"`
	// QueuedMessages start new turns after the current one.
	QueuedMessages []PendingMessage `json:"queuedMessages,omitzero"`
	// Draft is the user's unsent input.
	Draft *Message `json:"draft,omitempty"`
	// Meta is provider metadata.
	Meta map[string]any `json:"_meta,omitzero"`
}

// TurnState says how a turn ended.
type TurnState string

// Turn states.
const (
	TurnStateComplete  TurnState = "complete"
	TurnStateCancelled TurnState = "cancelled"
	TurnStateError     TurnState = "error"
)

// Turn is a completed turn.
type Turn struct {
	// ID identifies the turn.
	ID string `json:"id"`
	// StartedAt is when the turn started (ISO 8601).
	StartedAt string `json:"startedAt,omitempty"`
	// Duration is the turn's length in milliseconds.
	Duration *int64 `json:"duration,omitempty"`
	// Message is the message that started the turn.
	Message Message `json:"message"`
	// ResponseParts is the response in stream order.
	ResponseParts List[ResponsePart] `json:"responseParts"`
	// Usage is the turn's token usage.
	Usage *UsageInfo `json:"usage,omitempty"`
	// State says how the turn ended.
	State TurnState `json:"state"`
}

// ActiveTurn is the turn in progress.
type ActiveTurn struct {
	// ID identifies the turn.
	ID string `json:"id"`
	// StartedAt is when the turn started (ISO 8601).
	StartedAt string `json:"startedAt"`
	// Message is the message that started the turn.
	Message Message `json:"message"`
	// ResponseParts is the response so far.
	ResponseParts List[ResponsePart] `json:"responseParts"`
	// Usage is the turn's token usage so far.
	Usage *UsageInfo `json:"usage,omitempty"`
}

// Pending message kinds.
const (
	PendingSteering = "steering"
	PendingQueued   = "queued"
)

// PendingMessage is a steering or queued message.
type PendingMessage struct {
	// ID identifies the pending message.
	ID string `json:"id"`
	// Message is the message.
	Message Message `json:"message"`
}

// Background work kinds.
const (
	BackgroundShell    = "shell"
	BackgroundSubagent = "subagent"
)

// BackgroundWork is a shell or subagent running in a chat's background. Kind
// says which of the variant fields apply.
type BackgroundWork struct {
	// Kind is shell or subagent.
	Kind string `json:"kind"`
	// ID identifies the entry within the chat.
	ID string `json:"id"`
	// Label is a display label.
	Label string `json:"label"`
	// StartedAt is when the work started (ISO 8601).
	StartedAt string `json:"startedAt"`
	// Meta is provider metadata.
	Meta map[string]any `json:"_meta,omitzero"`
	// Command is a shell's command line.
	Command string `json:"command,omitempty"`
	// Terminal is a shell's terminal URI.
	Terminal string `json:"terminal,omitempty"`
	// Chat is a subagent's chat URI.
	Chat string `json:"chat,omitempty"`
}

// ResourceWatchState is the state of a resource watch channel: what is
// watched. Changes are not kept.
type ResourceWatchState struct {
	// Root is the watched URI.
	Root string `json:"root"`
	// Recursive reports whether descendants are watched.
	Recursive bool `json:"recursive"`
	// Excludes are excluded globs ({items}), kept opaque.
	Excludes json.RawMessage `json:"excludes,omitempty"`
	// Includes are included globs ({items}), kept opaque.
	Includes json.RawMessage `json:"includes,omitempty"`
}

// Resource change types.
const (
	ChangeAdded   = "added"
	ChangeUpdated = "updated"
	ChangeDeleted = "deleted"
)

// ResourceChange is one change a watch saw.
type ResourceChange struct {
	// URI is the resource that changed.
	URI string `json:"uri"`
	// Type is added, updated or deleted.
	Type string `json:"type"`
}

// ResourceChanges is a batch of changes ({items}).
type ResourceChanges struct {
	// Items are the changes.
	Items List[ResourceChange] `json:"items"`
}
