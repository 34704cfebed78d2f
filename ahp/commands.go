package ahp

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Method names of the requests and notifications a bots server handles or
// sends.
const (
	MethodInitialize          = "initialize"
	MethodPing                = "ping"
	MethodReconnect           = "reconnect"
	MethodSubscribe           = "subscribe"
	MethodUnsubscribe         = "unsubscribe"
	MethodDispatchAction      = "dispatchAction"
	MethodAction              = "action"
	MethodCreateSession       = "createSession"
	MethodDisposeSession      = "disposeSession"
	MethodListSessions        = "listSessions"
	MethodResourceRead        = "resourceRead"
	MethodResourceWrite       = "resourceWrite"
	MethodResourceList        = "resourceList"
	MethodResourceResolve     = "resourceResolve"
	MethodResourceDelete      = "resourceDelete"
	MethodCreateResourceWatch = "createResourceWatch"
	MethodSessionAdded        = "root/sessionAdded"
	MethodSessionRemoved      = "root/sessionRemoved"
	MethodSessionChanged      = "root/sessionSummaryChanged"
)

// Implementation names the software at one end of a connection.
type Implementation struct {
	// Name is the implementation's name.
	Name string `json:"name"`
	// Version is its version.
	Version string `json:"version,omitempty"`
	// Title is a display name.
	Title string `json:"title,omitempty"`
}

// InitializeParams is the params of initialize.
type InitializeParams struct {
	// Channel is RootURI.
	Channel string `json:"channel"`
	// Meta is request metadata.
	Meta map[string]any `json:"_meta,omitzero"`
	// ProtocolVersions are the versions the client speaks, preferred first.
	ProtocolVersions []string `json:"protocolVersions"`
	// ClientID identifies the client, for reconnect and action origins.
	ClientID string `json:"clientId"`
	// ClientInfo names the client implementation.
	ClientInfo *Implementation `json:"clientInfo,omitempty"`
	// InitialSubscriptions are channels to subscribe to at once.
	InitialSubscriptions []string `json:"initialSubscriptions,omitzero"`
	// Locale is the client's BCP 47 locale.
	Locale string `json:"locale,omitempty"`
	// Capabilities are the client's capabilities, kept opaque.
	Capabilities json.RawMessage `json:"capabilities,omitempty"`
}

// InitializeResult is the result of initialize.
type InitializeResult struct {
	// ProtocolVersion is the chosen version, one of the offered strings.
	ProtocolVersion string `json:"protocolVersion"`
	// ServerSeq is the current server sequence number.
	ServerSeq int64 `json:"serverSeq"`
	// ServerInfo names the server implementation.
	ServerInfo *Implementation `json:"serverInfo,omitempty"`
	// Meta holds namespaced extension capabilities.
	Meta map[string]any `json:"_meta,omitzero"`
	// Snapshots are the states of the initial subscriptions.
	Snapshots List[Snapshot] `json:"snapshots"`
	// DefaultDirectory is a folder for remote browsing.
	DefaultDirectory string `json:"defaultDirectory,omitempty"`
	// CompletionTriggerCharacters trigger completions requests.
	CompletionTriggerCharacters []string `json:"completionTriggerCharacters,omitzero"`
	// TerminalCommandPrefix is the prefix of terminal commands in messages.
	TerminalCommandPrefix string `json:"terminalCommandPrefix,omitempty"`
}

// Snapshot is the state of a channel at a sequence number: every later
// action on the channel has a greater serverSeq.
type Snapshot struct {
	// Resource is the channel URI.
	Resource string `json:"resource"`
	// State is the channel's state: a RootState, SessionState, ChatState or
	// ResourceWatchState (or a pointer to one) when built; a json.RawMessage
	// when decoded.
	State any `json:"state"`
	// FromSeq is the sequence number the state is at.
	FromSeq int64 `json:"fromSeq"`
}

// UnmarshalJSON decodes a snapshot, keeping the state as json.RawMessage.
func (s *Snapshot) UnmarshalJSON(data []byte) error {
	var w struct {
		Resource string          `json:"resource"`
		State    json.RawMessage `json:"state"`
		FromSeq  int64           `json:"fromSeq"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return fmt.Errorf("snapshot: %w", err)
	}
	*s = Snapshot{Resource: w.Resource, FromSeq: w.FromSeq}
	if w.State != nil {
		s.State = cloneRaw(w.State)
	}
	return nil
}

// ReconnectParams is the params of reconnect.
type ReconnectParams struct {
	// Channel is RootURI.
	Channel string `json:"channel"`
	// Meta is request metadata.
	Meta map[string]any `json:"_meta,omitzero"`
	// ClientID is the client's id from initialize.
	ClientID string `json:"clientId"`
	// LastSeenServerSeq is the last serverSeq the client received.
	LastSeenServerSeq int64 `json:"lastSeenServerSeq"`
	// Subscriptions are the channels the client was subscribed to.
	Subscriptions []string `json:"subscriptions"`
}

// Reconnect result types.
const (
	ReconnectReplay   = "replay"
	ReconnectSnapshot = "snapshot"
)

// ReconnectResult is the result of reconnect: a replay of missed actions
// (Type "replay": Actions, Missing) or fresh snapshots (Type "snapshot":
// Snapshots).
type ReconnectResult struct {
	// Type is "replay" or "snapshot".
	Type string
	// Actions are the missed envelopes (replay).
	Actions []ActionEnvelope
	// Missing are subscriptions the server cannot resume (replay).
	Missing []string
	// Snapshots are fresh snapshots of the subscriptions (snapshot).
	Snapshots []Snapshot
}

// MarshalJSON encodes the members of the result's type.
func (r ReconnectResult) MarshalJSON() ([]byte, error) {
	if r.Type == ReconnectSnapshot {
		return marshalObject([]field{{"type", r.Type}, {"snapshots", List[Snapshot](r.Snapshots)}})
	}
	return marshalObject([]field{
		{"type", r.Type},
		{"actions", List[ActionEnvelope](r.Actions)},
		{"missing", List[string](r.Missing)},
	})
}

// UnmarshalJSON decodes a reconnect result of either type.
func (r *ReconnectResult) UnmarshalJSON(data []byte) error {
	var w struct {
		Type      string           `json:"type"`
		Actions   []ActionEnvelope `json:"actions"`
		Missing   []string         `json:"missing"`
		Snapshots []Snapshot       `json:"snapshots"`
	}
	if err := json.Unmarshal(data, &w); err != nil {
		return fmt.Errorf("reconnect result: %w", err)
	}
	*r = ReconnectResult(w)
	return nil
}

// SubscribeParams is the params of subscribe.
type SubscribeParams struct {
	// Channel is the channel to subscribe to.
	Channel string `json:"channel"`
	// Meta is request metadata.
	Meta map[string]any `json:"_meta,omitzero"`
	// Delivery holds advisory delivery preferences, kept opaque.
	Delivery json.RawMessage `json:"delivery,omitempty"`
	// View is the advisory snapshot shape.
	View *SubscribeView `json:"view,omitempty"`
}

// SubscribeView asks for a snapshot shape.
type SubscribeView struct {
	// Turns is the advisory number of recent turns of a chat snapshot.
	Turns *int64 `json:"turns,omitempty"`
}

// SubscribeResult is the result of subscribe; Snapshot is nil for stateless
// channels.
type SubscribeResult struct {
	// Snapshot is the channel's state.
	Snapshot *Snapshot `json:"snapshot,omitempty"`
}

// UnsubscribeParams is the params of unsubscribe.
type UnsubscribeParams struct {
	// Channel is the channel to leave.
	Channel string `json:"channel"`
}

// PingParams is the params of ping; its result is {}.
type PingParams struct {
	// Channel is RootURI.
	Channel string `json:"channel"`
}

// CreateSessionParams is the params of createSession; its result is null.
type CreateSessionParams struct {
	// Channel is the new session's URI, chosen by the client.
	Channel string `json:"channel"`
	// Meta is request metadata.
	Meta map[string]any `json:"_meta,omitzero"`
	// Provider is the agent provider.
	Provider string `json:"provider,omitempty"`
	// WorkingDirectories are the directories the agent may use.
	WorkingDirectories []string `json:"workingDirectories,omitzero"`
	// Repositories are repositories to prepare, kept opaque.
	Repositories []json.RawMessage `json:"repositories,omitzero"`
	// Config holds values from resolveSessionConfig.
	Config map[string]any `json:"config,omitzero"`
	// ActiveClient makes the creating client active at once.
	ActiveClient *SessionActiveClient `json:"activeClient,omitempty"`
	// ProgressToken opts into progress notifications.
	ProgressToken string `json:"progressToken,omitempty"`
}

// DisposeSessionParams is the params of disposeSession; its result is {}.
type DisposeSessionParams struct {
	// Channel is the session URI.
	Channel string `json:"channel"`
	// Meta is request metadata.
	Meta map[string]any `json:"_meta,omitzero"`
}

// ListSessionsParams is the params of listSessions.
type ListSessionsParams struct {
	// Channel is RootURI.
	Channel string `json:"channel"`
	// Meta is request metadata.
	Meta map[string]any `json:"_meta,omitzero"`
	// Limit is the page size; nil lets the server choose.
	Limit *int64 `json:"limit,omitempty"`
	// Cursor continues a previous page.
	Cursor string `json:"cursor,omitempty"`
}

// ListSessionsResult is the result of listSessions.
type ListSessionsResult struct {
	// Items are the sessions, most recently modified first.
	Items List[SessionSummary] `json:"items"`
	// NextCursor is set when more sessions follow.
	NextCursor string `json:"nextCursor,omitempty"`
}

// SessionAddedParams is the params of root/sessionAdded.
type SessionAddedParams struct {
	// Channel is RootURI.
	Channel string `json:"channel"`
	// Summary is the new session's summary.
	Summary SessionSummary `json:"summary"`
}

// SessionRemovedParams is the params of root/sessionRemoved.
type SessionRemovedParams struct {
	// Channel is RootURI.
	Channel string `json:"channel"`
	// Session is the removed session's URI.
	Session string `json:"session"`
}

// SessionSummaryChangedParams is the params of root/sessionSummaryChanged.
type SessionSummaryChangedParams struct {
	// Channel is RootURI.
	Channel string `json:"channel"`
	// Session is the session's URI.
	Session string `json:"session"`
	// Changes holds the changed fields.
	Changes PartialSessionSummary `json:"changes"`
}

// Content encodings.
const (
	EncodingBase64 = "base64"
	EncodingUTF8   = "utf-8"
)

// ResourceReadParams is the params of resourceRead.
type ResourceReadParams struct {
	// Channel is RootURI.
	Channel string `json:"channel"`
	// Meta is request metadata.
	Meta map[string]any `json:"_meta,omitzero"`
	// URI is the resource to read.
	URI string `json:"uri"`
	// Encoding is the preferred encoding (base64 or utf-8).
	Encoding string `json:"encoding,omitempty"`
}

// ResourceReadResult is the result of resourceRead.
type ResourceReadResult struct {
	// Data is the content, encoded.
	Data string `json:"data"`
	// Encoding is how Data is encoded.
	Encoding string `json:"encoding"`
	// ContentType is the content's MIME type.
	ContentType string `json:"contentType,omitempty"`
}

// Resource write modes.
const (
	WriteTruncate = "truncate"
	WriteAppend   = "append"
	WriteInsert   = "insert"
)

// ResourceWriteParams is the params of resourceWrite; its result is {}.
type ResourceWriteParams struct {
	// Channel is RootURI.
	Channel string `json:"channel"`
	// Meta is request metadata.
	Meta map[string]any `json:"_meta,omitzero"`
	// URI is the resource to write.
	URI string `json:"uri"`
	// Data is the content, encoded.
	Data string `json:"data"`
	// Encoding is how Data is encoded.
	Encoding string `json:"encoding"`
	// ContentType is the content's MIME type.
	ContentType string `json:"contentType,omitempty"`
	// CreateOnly fails the write when the resource exists (-32010).
	CreateOnly bool `json:"createOnly,omitempty"`
	// Mode is truncate (default), append or insert.
	Mode string `json:"mode,omitempty"`
	// Position is a byte offset, read according to Mode.
	Position *int64 `json:"position,omitempty"`
	// IfMatch fails the write unless the current etag matches (-32011).
	IfMatch string `json:"ifMatch,omitempty"`
}

// ResourceListParams is the params of resourceList.
type ResourceListParams struct {
	// Channel is RootURI.
	Channel string `json:"channel"`
	// Meta is request metadata.
	Meta map[string]any `json:"_meta,omitzero"`
	// URI is the directory to list.
	URI string `json:"uri"`
}

// DirectoryEntry is an entry of a resourceList result.
type DirectoryEntry struct {
	// Name is the entry's base name.
	Name string `json:"name"`
	// Type is "file" or "directory".
	Type string `json:"type"`
}

// ResourceListResult is the result of resourceList.
type ResourceListResult struct {
	// Entries are the directory's entries.
	Entries List[DirectoryEntry] `json:"entries"`
}

// ResourceResolveParams is the params of resourceResolve.
type ResourceResolveParams struct {
	// Channel is RootURI.
	Channel string `json:"channel"`
	// Meta is request metadata.
	Meta map[string]any `json:"_meta,omitzero"`
	// URI is the resource to resolve.
	URI string `json:"uri"`
	// FollowSymlinks follows symbolic links (default true).
	FollowSymlinks *bool `json:"followSymlinks,omitempty"`
}

// Resource types.
const (
	ResourceFile      = "file"
	ResourceDirectory = "directory"
	ResourceSymlink   = "symlink"
)

// ResourceResolveResult is the result of resourceResolve.
type ResourceResolveResult struct {
	// URI is the canonical URI.
	URI string `json:"uri"`
	// Type is file, directory or symlink.
	Type string `json:"type"`
	// Size is the size in bytes.
	Size *int64 `json:"size,omitempty"`
	// Mtime is the modification time (ISO 8601).
	Mtime string `json:"mtime,omitempty"`
	// Ctime is the creation time (ISO 8601).
	Ctime string `json:"ctime,omitempty"`
	// ContentType is the MIME type.
	ContentType string `json:"contentType,omitempty"`
	// Etag is the version token to pass as IfMatch.
	Etag string `json:"etag,omitempty"`
}

// ResourceDeleteParams is the params of resourceDelete; its result is {}.
type ResourceDeleteParams struct {
	// Channel is RootURI.
	Channel string `json:"channel"`
	// Meta is request metadata.
	Meta map[string]any `json:"_meta,omitzero"`
	// URI is the resource to delete.
	URI string `json:"uri"`
	// Recursive deletes a non-empty directory.
	Recursive bool `json:"recursive,omitempty"`
}

// GlobList is a list of globs ({items}).
type GlobList struct {
	// Items are the globs.
	Items List[string] `json:"items"`
}

// CreateResourceWatchParams is the params of createResourceWatch.
type CreateResourceWatchParams struct {
	// Channel is RootURI.
	Channel string `json:"channel"`
	// Meta is request metadata.
	Meta map[string]any `json:"_meta,omitzero"`
	// URI is the resource to watch.
	URI string `json:"uri"`
	// Recursive watches descendants.
	Recursive bool `json:"recursive,omitempty"`
	// Excludes are globs to leave out.
	Excludes *GlobList `json:"excludes,omitempty"`
	// Includes are globs to restrict to.
	Includes *GlobList `json:"includes,omitempty"`
}

// CreateResourceWatchResult is the result of createResourceWatch.
type CreateResourceWatchResult struct {
	// Channel is the watch channel (ahp-resource-watch:/<id>).
	Channel string `json:"channel"`
}

// EmptyResult is the {} result of ping, resourceWrite, resourceDelete,
// disposeSession and other acknowledgements.
type EmptyResult struct{}

// ParamsChannel reads the channel member of a request's params, for routing
// on (method, channel). Missing or malformed params read as "".
func ParamsChannel(params json.RawMessage) string {
	if len(bytes.TrimSpace(params)) == 0 {
		return ""
	}
	c, err := discriminator(params, "channel")
	if err != nil {
		return ""
	}
	return c
}
