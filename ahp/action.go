package ahp

import (
	"encoding/json"
	"fmt"
	"reflect"
)

// ActionType is the type of a state action, e.g. "chat/turnStarted".
type ActionType string

// Action types this package knows: it decodes them into typed bodies and the
// reducers apply them. Any other type still decodes, keeps its JSON and
// leaves states unchanged.
const (
	ActionRootAgentsChanged         ActionType = "root/agentsChanged"
	ActionRootActiveSessionsChanged ActionType = "root/activeSessionsChanged"
	ActionRootTerminalsChanged      ActionType = "root/terminalsChanged"
	ActionRootConfigChanged         ActionType = "root/configChanged"

	ActionSessionReady                    ActionType = "session/ready"
	ActionSessionCreationFailed           ActionType = "session/creationFailed"
	ActionSessionTitleChanged             ActionType = "session/titleChanged"
	ActionSessionChatAdded                ActionType = "session/chatAdded"
	ActionSessionChatRemoved              ActionType = "session/chatRemoved"
	ActionSessionChatUpdated              ActionType = "session/chatUpdated"
	ActionSessionDefaultChatChanged       ActionType = "session/defaultChatChanged"
	ActionSessionIsReadChanged            ActionType = "session/isReadChanged"
	ActionSessionIsArchivedChanged        ActionType = "session/isArchivedChanged"
	ActionSessionActivityChanged          ActionType = "session/activityChanged"
	ActionSessionServerToolsChanged       ActionType = "session/serverToolsChanged"
	ActionSessionActiveClientSet          ActionType = "session/activeClientSet"
	ActionSessionActiveClientRemoved      ActionType = "session/activeClientRemoved"
	ActionSessionInputNeededSet           ActionType = "session/inputNeededSet"
	ActionSessionInputNeededRemoved       ActionType = "session/inputNeededRemoved"
	ActionSessionWorkingDirectorySet      ActionType = "session/workingDirectorySet"
	ActionSessionWorkingDirectoryRemoved  ActionType = "session/workingDirectoryRemoved"
	ActionSessionWorkingDirectoryReplaced ActionType = "session/workingDirectoryReplaced"
	ActionSessionConfigChanged            ActionType = "session/configChanged"
	ActionSessionMetaChanged              ActionType = "session/metaChanged"
	ActionSessionChangesetsChanged        ActionType = "session/changesetsChanged"
	ActionSessionCustomizationsChanged    ActionType = "session/customizationsChanged"
	ActionChatTurnStarted                 ActionType = "chat/turnStarted"
	ActionChatDelta                       ActionType = "chat/delta"
	ActionChatResponsePart                ActionType = "chat/responsePart"
	ActionChatReasoning                   ActionType = "chat/reasoning"
	ActionChatUsage                       ActionType = "chat/usage"
	ActionChatTurnComplete                ActionType = "chat/turnComplete"
	ActionChatTurnCancelled               ActionType = "chat/turnCancelled"
	ActionChatError                       ActionType = "chat/error"
	ActionChatTurnResume                  ActionType = "chat/turnResume"
	ActionChatToolCallStart               ActionType = "chat/toolCallStart"
	ActionChatToolCallDelta               ActionType = "chat/toolCallDelta"
	ActionChatToolCallReady               ActionType = "chat/toolCallReady"
	ActionChatToolCallConfirmed           ActionType = "chat/toolCallConfirmed"
	ActionChatToolCallComplete            ActionType = "chat/toolCallComplete"
	ActionChatToolCallResultConfirmed     ActionType = "chat/toolCallResultConfirmed"
	ActionChatToolCallContentChanged      ActionType = "chat/toolCallContentChanged"
	ActionChatToolCallAuthRequired        ActionType = "chat/toolCallAuthRequired"
	ActionChatToolCallAuthResolved        ActionType = "chat/toolCallAuthResolved"
	ActionChatPendingMessageSet           ActionType = "chat/pendingMessageSet"
	ActionChatPendingMessageRemoved       ActionType = "chat/pendingMessageRemoved"
	ActionChatQueuedMessagesReordered     ActionType = "chat/queuedMessagesReordered"
	ActionChatInputRequested              ActionType = "chat/inputRequested"
	ActionChatInputAnswerChanged          ActionType = "chat/inputAnswerChanged"
	ActionChatInputCompleted              ActionType = "chat/inputCompleted"
	ActionChatTruncated                   ActionType = "chat/truncated"
	ActionChatTurnsLoaded                 ActionType = "chat/turnsLoaded"
	ActionChatActivityChanged             ActionType = "chat/activityChanged"
	ActionChatDraftChanged                ActionType = "chat/draftChanged"
	ActionChatWorkingDirectorySet         ActionType = "chat/workingDirectorySet"
	ActionChatWorkingDirectoryRemoved     ActionType = "chat/workingDirectoryRemoved"
	ActionChatIsReadChanged               ActionType = "chat/isReadChanged"
	ActionChatIsArchivedChanged           ActionType = "chat/isArchivedChanged"
	ActionChatBackgroundWorkSet           ActionType = "chat/backgroundWorkSet"
	ActionChatBackgroundWorkRemoved       ActionType = "chat/backgroundWorkRemoved"
	ActionResourceWatchChanged            ActionType = "resourceWatch/changed"
)

// ActionBody is the payload of an action of a known type: a pointer to one of
// the *Action structs of this package.
type ActionBody interface {
	// ActionType returns the type the body belongs to.
	ActionType() ActionType
}

// Action is a state action. For a type this package knows, Body holds the
// typed payload (e.g. *ChatTurnStartedAction); for any other type Body is nil
// and Raw holds the action's JSON, which encodes back unchanged.
//
// Build actions with the constructors ([TurnStarted], [Delta], …) or with
// [NewAction]; decode them with json.Unmarshal.
type Action struct {
	// Type is the action type.
	Type ActionType
	// Body is the typed payload of a known type, nil otherwise.
	Body ActionBody
	// Raw is the JSON of an action of an unknown type.
	Raw json.RawMessage
}

// NewAction returns the action carrying body.
func NewAction(body ActionBody) Action {
	return Action{Type: body.ActionType(), Body: body}
}

// MarshalJSON encodes the action: its body with its type, or the raw JSON of
// an unknown action.
func (a Action) MarshalJSON() ([]byte, error) {
	switch {
	case a.Body != nil:
		b, err := json.Marshal(a.Body)
		if err != nil {
			return nil, fmt.Errorf("action %s: %w", a.Body.ActionType(), err)
		}
		return withMember("type", a.Body.ActionType(), b)
	case a.Raw != nil:
		return a.Raw, nil
	case a.Type != "":
		return marshalObject([]field{{"type", a.Type}})
	}
	return nil, fmt.Errorf("action: no type")
}

// UnmarshalJSON decodes an action. A known type decodes into its body and
// fails if the payload does not fit it; an unknown type keeps its JSON in Raw.
// An action without a string type is an error.
func (a *Action) UnmarshalJSON(data []byte) error {
	t, err := discriminator(data, "type")
	if err != nil {
		return fmt.Errorf("action: %w", err)
	}
	if t == "" {
		return fmt.Errorf("action: missing type")
	}
	*a = Action{Type: ActionType(t)}
	body := newBody(a.Type)
	if body == nil {
		a.Raw = cloneRaw(data)
		return nil
	}
	if err := json.Unmarshal(data, body); err != nil {
		return fmt.Errorf("action %s: %w", t, err)
	}
	a.Body = body
	return nil
}

// Known reports whether the action's type is one this package decodes and
// reduces.
func (a Action) Known() bool { return a.body() != nil }

// body returns the action's body, or nil when there is none or it is a nil
// pointer, so reducers can switch on it safely.
func (a Action) body() ActionBody {
	if a.Body == nil {
		return nil
	}
	if v := reflect.ValueOf(a.Body); v.Kind() == reflect.Pointer && v.IsNil() {
		return nil
	}
	return a.Body
}

// newBody returns a new, empty body for a known action type, or nil.
func newBody(t ActionType) ActionBody {
	switch t {
	case ActionRootAgentsChanged:
		return new(RootAgentsChangedAction)
	case ActionRootActiveSessionsChanged:
		return new(RootActiveSessionsChangedAction)
	case ActionRootTerminalsChanged:
		return new(RootTerminalsChangedAction)
	case ActionRootConfigChanged:
		return new(RootConfigChangedAction)
	case ActionSessionReady:
		return new(SessionReadyAction)
	case ActionSessionCreationFailed:
		return new(SessionCreationFailedAction)
	case ActionSessionTitleChanged:
		return new(SessionTitleChangedAction)
	case ActionSessionChatAdded:
		return new(SessionChatAddedAction)
	case ActionSessionChatRemoved:
		return new(SessionChatRemovedAction)
	case ActionSessionChatUpdated:
		return new(SessionChatUpdatedAction)
	case ActionSessionDefaultChatChanged:
		return new(SessionDefaultChatChangedAction)
	case ActionSessionIsReadChanged:
		return new(SessionIsReadChangedAction)
	case ActionSessionIsArchivedChanged:
		return new(SessionIsArchivedChangedAction)
	case ActionSessionActivityChanged:
		return new(SessionActivityChangedAction)
	case ActionSessionServerToolsChanged:
		return new(SessionServerToolsChangedAction)
	case ActionSessionActiveClientSet:
		return new(SessionActiveClientSetAction)
	case ActionSessionActiveClientRemoved:
		return new(SessionActiveClientRemovedAction)
	case ActionSessionInputNeededSet:
		return new(SessionInputNeededSetAction)
	case ActionSessionInputNeededRemoved:
		return new(SessionInputNeededRemovedAction)
	case ActionSessionWorkingDirectorySet:
		return new(SessionWorkingDirectorySetAction)
	case ActionSessionWorkingDirectoryRemoved:
		return new(SessionWorkingDirectoryRemovedAction)
	case ActionSessionWorkingDirectoryReplaced:
		return new(SessionWorkingDirectoryReplacedAction)
	case ActionSessionConfigChanged:
		return new(SessionConfigChangedAction)
	case ActionSessionMetaChanged:
		return new(SessionMetaChangedAction)
	case ActionSessionChangesetsChanged:
		return new(SessionChangesetsChangedAction)
	case ActionSessionCustomizationsChanged:
		return new(SessionCustomizationsChangedAction)
	}
	return newChatBody(t)
}

func newChatBody(t ActionType) ActionBody {
	switch t {
	case ActionChatTurnStarted:
		return new(ChatTurnStartedAction)
	case ActionChatDelta:
		return new(ChatDeltaAction)
	case ActionChatResponsePart:
		return new(ChatResponsePartAction)
	case ActionChatReasoning:
		return new(ChatReasoningAction)
	case ActionChatUsage:
		return new(ChatUsageAction)
	case ActionChatTurnComplete:
		return new(ChatTurnCompleteAction)
	case ActionChatTurnCancelled:
		return new(ChatTurnCancelledAction)
	case ActionChatError:
		return new(ChatErrorAction)
	case ActionChatTurnResume:
		return new(ChatTurnResumeAction)
	case ActionChatToolCallStart:
		return new(ChatToolCallStartAction)
	case ActionChatToolCallDelta:
		return new(ChatToolCallDeltaAction)
	case ActionChatToolCallReady:
		return new(ChatToolCallReadyAction)
	case ActionChatToolCallConfirmed:
		return new(ChatToolCallConfirmedAction)
	case ActionChatToolCallComplete:
		return new(ChatToolCallCompleteAction)
	case ActionChatToolCallResultConfirmed:
		return new(ChatToolCallResultConfirmedAction)
	case ActionChatToolCallContentChanged:
		return new(ChatToolCallContentChangedAction)
	case ActionChatToolCallAuthRequired:
		return new(ChatToolCallAuthRequiredAction)
	case ActionChatToolCallAuthResolved:
		return new(ChatToolCallAuthResolvedAction)
	case ActionChatPendingMessageSet:
		return new(ChatPendingMessageSetAction)
	case ActionChatPendingMessageRemoved:
		return new(ChatPendingMessageRemovedAction)
	case ActionChatQueuedMessagesReordered:
		return new(ChatQueuedMessagesReorderedAction)
	case ActionChatInputRequested:
		return new(ChatInputRequestedAction)
	case ActionChatInputAnswerChanged:
		return new(ChatInputAnswerChangedAction)
	case ActionChatInputCompleted:
		return new(ChatInputCompletedAction)
	case ActionChatTruncated:
		return new(ChatTruncatedAction)
	case ActionChatTurnsLoaded:
		return new(ChatTurnsLoadedAction)
	case ActionChatActivityChanged:
		return new(ChatActivityChangedAction)
	case ActionChatDraftChanged:
		return new(ChatDraftChangedAction)
	case ActionChatWorkingDirectorySet:
		return new(ChatWorkingDirectorySetAction)
	case ActionChatWorkingDirectoryRemoved:
		return new(ChatWorkingDirectoryRemovedAction)
	case ActionChatIsReadChanged:
		return new(ChatIsReadChangedAction)
	case ActionChatIsArchivedChanged:
		return new(ChatIsArchivedChangedAction)
	case ActionChatBackgroundWorkSet:
		return new(ChatBackgroundWorkSetAction)
	case ActionChatBackgroundWorkRemoved:
		return new(ChatBackgroundWorkRemovedAction)
	case ActionResourceWatchChanged:
		return new(ResourceWatchChangedAction)
	}
	return nil
}

// ActionOrigin identifies the client that dispatched an action.
type ActionOrigin struct {
	// ClientID is the dispatching client's id.
	ClientID string `json:"clientId"`
	// ClientSeq is the client's sequence number for the action.
	ClientSeq int64 `json:"clientSeq"`
}

// ActionEnvelope is the params of the server's "action" notification.
type ActionEnvelope struct {
	// Channel is the channel the action belongs to, as the client spelled it.
	Channel string `json:"channel"`
	// Action is the action.
	Action Action `json:"action"`
	// ServerSeq is the server's sequence number.
	ServerSeq int64 `json:"serverSeq"`
	// Origin identifies the dispatching client; nil for server actions.
	Origin *ActionOrigin `json:"origin,omitempty"`
	// RejectionReason is set when the server rejected the dispatched action.
	RejectionReason string `json:"rejectionReason,omitempty"`
}

// DispatchActionParams is the params of the client's "dispatchAction"
// notification.
type DispatchActionParams struct {
	// Channel is the channel the action targets.
	Channel string `json:"channel"`
	// ClientSeq is the client's sequence number for the action.
	ClientSeq int64 `json:"clientSeq"`
	// Action is the action.
	Action Action `json:"action"`
}
