package ahp

import "encoding/json"

// RootAgentsChangedAction replaces the root's agent list.
type RootAgentsChangedAction struct {
	// Agents is the new agent list.
	Agents List[AgentInfo] `json:"agents"`
}

// RootActiveSessionsChangedAction sets the number of active sessions.
type RootActiveSessionsChangedAction struct {
	// ActiveSessions is the number of active sessions.
	ActiveSessions int64 `json:"activeSessions"`
}

// RootTerminalsChangedAction replaces the root's terminal list.
type RootTerminalsChangedAction struct {
	// Terminals is the new terminal list, kept opaque.
	Terminals List[json.RawMessage] `json:"terminals"`
}

// RootConfigChangedAction merges (or, with Replace, replaces) host
// configuration values.
type RootConfigChangedAction struct {
	// Config holds the values by property id.
	Config map[string]any `json:"config"`
	// Replace replaces all values instead of merging.
	Replace bool `json:"replace,omitempty"`
}

// SessionReadyAction marks a session ready.
type SessionReadyAction struct{}

// SessionCreationFailedAction marks a session failed.
type SessionCreationFailedAction struct {
	// Error tells why creation failed.
	Error ErrorInfo `json:"error"`
}

// SessionTitleChangedAction sets a session's title.
type SessionTitleChangedAction struct {
	// Title is the new title.
	Title string `json:"title"`
}

// SessionChatAddedAction adds a chat to the catalogue, or replaces the entry
// with the same resource.
type SessionChatAddedAction struct {
	// Summary is the chat's summary.
	Summary ChatSummary `json:"summary"`
}

// SessionChatRemovedAction removes a chat from the catalogue.
type SessionChatRemovedAction struct {
	// Chat is the chat URI.
	Chat string `json:"chat"`
}

// SessionChatUpdatedAction changes some fields of a catalogue entry.
type SessionChatUpdatedAction struct {
	// Chat is the chat URI.
	Chat string `json:"chat"`
	// Changes holds the changed fields.
	Changes PartialChatSummary `json:"changes"`
}

// SessionDefaultChatChangedAction sets or clears the default chat.
type SessionDefaultChatChangedAction struct {
	// DefaultChat is the new default chat; empty clears it.
	DefaultChat string `json:"defaultChat,omitempty"`
}

// SessionIsReadChangedAction sets or clears a session's IsRead flag.
type SessionIsReadChangedAction struct {
	// IsRead is the new flag.
	IsRead bool `json:"isRead"`
}

// SessionIsArchivedChangedAction sets or clears a session's IsArchived flag.
type SessionIsArchivedChangedAction struct {
	// IsArchived is the new flag.
	IsArchived bool `json:"isArchived"`
}

// SessionActivityChangedAction sets or clears a session's activity.
type SessionActivityChangedAction struct {
	// Activity is the new activity; empty clears it.
	Activity string `json:"activity,omitempty"`
}

// SessionServerToolsChangedAction replaces the session's server tools.
type SessionServerToolsChangedAction struct {
	// Tools is the new tool list.
	Tools List[ToolDefinition] `json:"tools"`
}

// SessionActiveClientSetAction adds an active client, or replaces the entry
// with the same client id.
type SessionActiveClientSetAction struct {
	// ActiveClient is the client's entry.
	ActiveClient SessionActiveClient `json:"activeClient"`
}

// SessionActiveClientRemovedAction removes an active client.
type SessionActiveClientRemovedAction struct {
	// ClientID is the client to remove.
	ClientID string `json:"clientId"`
}

// SessionInputNeededSetAction adds an input-needed entry, or replaces the
// entry with the same id.
type SessionInputNeededSetAction struct {
	// Request is the entry.
	Request SessionInputRequest `json:"request"`
}

// SessionInputNeededRemovedAction removes an input-needed entry.
type SessionInputNeededRemovedAction struct {
	// ID is the entry's id.
	ID string `json:"id"`
}

// SessionWorkingDirectorySetAction adds a working directory.
type SessionWorkingDirectorySetAction struct {
	// Directory is the directory URI.
	Directory string `json:"directory"`
}

// SessionWorkingDirectoryRemovedAction removes a working directory.
type SessionWorkingDirectoryRemovedAction struct {
	// Directory is the directory URI.
	Directory string `json:"directory"`
}

// SessionWorkingDirectoryReplacedAction replaces a working directory in
// place.
type SessionWorkingDirectoryReplacedAction struct {
	// Directory is the directory to replace.
	Directory string `json:"directory"`
	// Replacement is the directory that takes its place.
	Replacement string `json:"replacement"`
}

// SessionConfigChangedAction merges (or, with Replace, replaces) session
// configuration values.
type SessionConfigChangedAction struct {
	// Config holds the values by property id.
	Config map[string]any `json:"config"`
	// Replace replaces all values instead of merging.
	Replace bool `json:"replace,omitempty"`
}

// SessionMetaChangedAction replaces a session's _meta.
type SessionMetaChangedAction struct {
	// Meta is the new _meta; nil clears it.
	Meta map[string]any `json:"_meta,omitzero"`
}

// SessionChangesetsChangedAction replaces the changeset catalogue.
type SessionChangesetsChangedAction struct {
	// Changesets is the new catalogue, kept opaque; nil clears it.
	Changesets []json.RawMessage `json:"changesets,omitzero"`
}

// SessionCustomizationsChangedAction replaces the session's customizations.
type SessionCustomizationsChangedAction struct {
	// Customizations is the new list, kept opaque.
	Customizations List[json.RawMessage] `json:"customizations"`
}

// ResourceWatchChangedAction reports a batch of changes on a watch channel.
type ResourceWatchChangedAction struct {
	// Changes is the batch ({items}).
	Changes ResourceChanges `json:"changes"`
}

// ActionType implements ActionBody.
func (*RootAgentsChangedAction) ActionType() ActionType { return ActionRootAgentsChanged }

// ActionType implements ActionBody.
func (*RootActiveSessionsChangedAction) ActionType() ActionType {
	return ActionRootActiveSessionsChanged
}

// ActionType implements ActionBody.
func (*RootTerminalsChangedAction) ActionType() ActionType { return ActionRootTerminalsChanged }

// ActionType implements ActionBody.
func (*RootConfigChangedAction) ActionType() ActionType { return ActionRootConfigChanged }

// ActionType implements ActionBody.
func (*SessionReadyAction) ActionType() ActionType { return ActionSessionReady }

// ActionType implements ActionBody.
func (*SessionCreationFailedAction) ActionType() ActionType { return ActionSessionCreationFailed }

// ActionType implements ActionBody.
func (*SessionTitleChangedAction) ActionType() ActionType { return ActionSessionTitleChanged }

// ActionType implements ActionBody.
func (*SessionChatAddedAction) ActionType() ActionType { return ActionSessionChatAdded }

// ActionType implements ActionBody.
func (*SessionChatRemovedAction) ActionType() ActionType { return ActionSessionChatRemoved }

// ActionType implements ActionBody.
func (*SessionChatUpdatedAction) ActionType() ActionType { return ActionSessionChatUpdated }

// ActionType implements ActionBody.
func (*SessionDefaultChatChangedAction) ActionType() ActionType {
	return ActionSessionDefaultChatChanged
}

// ActionType implements ActionBody.
func (*SessionIsReadChangedAction) ActionType() ActionType { return ActionSessionIsReadChanged }

// ActionType implements ActionBody.
func (*SessionIsArchivedChangedAction) ActionType() ActionType {
	return ActionSessionIsArchivedChanged
}

// ActionType implements ActionBody.
func (*SessionActivityChangedAction) ActionType() ActionType { return ActionSessionActivityChanged }

// ActionType implements ActionBody.
func (*SessionServerToolsChangedAction) ActionType() ActionType {
	return ActionSessionServerToolsChanged
}

// ActionType implements ActionBody.
func (*SessionActiveClientSetAction) ActionType() ActionType { return ActionSessionActiveClientSet }

// ActionType implements ActionBody.
func (*SessionActiveClientRemovedAction) ActionType() ActionType {
	return ActionSessionActiveClientRemoved
}

// ActionType implements ActionBody.
func (*SessionInputNeededSetAction) ActionType() ActionType { return ActionSessionInputNeededSet }

// ActionType implements ActionBody.
func (*SessionInputNeededRemovedAction) ActionType() ActionType {
	return ActionSessionInputNeededRemoved
}

// ActionType implements ActionBody.
func (*SessionWorkingDirectorySetAction) ActionType() ActionType {
	return ActionSessionWorkingDirectorySet
}

// ActionType implements ActionBody.
func (*SessionWorkingDirectoryRemovedAction) ActionType() ActionType {
	return ActionSessionWorkingDirectoryRemoved
}

// ActionType implements ActionBody.
func (*SessionWorkingDirectoryReplacedAction) ActionType() ActionType {
	return ActionSessionWorkingDirectoryReplaced
}

// ActionType implements ActionBody.
func (*SessionConfigChangedAction) ActionType() ActionType { return ActionSessionConfigChanged }

// ActionType implements ActionBody.
func (*SessionMetaChangedAction) ActionType() ActionType { return ActionSessionMetaChanged }

// ActionType implements ActionBody.
func (*SessionChangesetsChangedAction) ActionType() ActionType {
	return ActionSessionChangesetsChanged
}

// ActionType implements ActionBody.
func (*SessionCustomizationsChangedAction) ActionType() ActionType {
	return ActionSessionCustomizationsChanged
}

// ActionType implements ActionBody.
func (*ResourceWatchChangedAction) ActionType() ActionType { return ActionResourceWatchChanged }
