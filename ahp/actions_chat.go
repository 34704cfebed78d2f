package ahp

import "encoding/json"

// ChatTurnStartedAction starts a turn with a message.
type ChatTurnStartedAction struct {
	// TurnID identifies the new turn (chosen by the dispatcher).
	TurnID string `json:"turnId"`
	// StartedAt is when the turn started (ISO 8601).
	StartedAt string `json:"startedAt"`
	// Message is the message that starts the turn.
	Message Message `json:"message"`
	// QueuedMessageID names the queued (or steering) message the turn
	// consumes.
	QueuedMessageID string `json:"queuedMessageId,omitempty"`
	// Meta is provider metadata.
	Meta map[string]any `json:"_meta,omitzero"`
}

// ChatDeltaAction appends text to a markdown part.
type ChatDeltaAction struct {
	// TurnID is the active turn.
	TurnID string `json:"turnId"`
	// PartID is the markdown part.
	PartID string `json:"partId"`
	// Content is the text to append.
	Content string `json:"content"`
	// Meta is provider metadata.
	Meta map[string]any `json:"_meta,omitzero"`
}

// ChatResponsePartAction appends a response part. Error parts are ignored:
// they come with chat/error.
type ChatResponsePartAction struct {
	// TurnID is the active turn.
	TurnID string `json:"turnId"`
	// Part is the part to append.
	Part ResponsePart `json:"part"`
	// Meta is provider metadata.
	Meta map[string]any `json:"_meta,omitzero"`
}

// ChatReasoningAction appends text to a reasoning part.
type ChatReasoningAction struct {
	// TurnID is the active turn.
	TurnID string `json:"turnId"`
	// PartID is the reasoning part.
	PartID string `json:"partId"`
	// Content is the text to append.
	Content string `json:"content"`
	// Meta is provider metadata.
	Meta map[string]any `json:"_meta,omitzero"`
}

// ChatUsageAction reports the token usage of the active turn.
type ChatUsageAction struct {
	// TurnID is the active turn.
	TurnID string `json:"turnId"`
	// Usage is the usage so far.
	Usage UsageInfo `json:"usage"`
	// Meta is provider metadata.
	Meta map[string]any `json:"_meta,omitzero"`
}

// ChatTurnCompleteAction ends the active turn normally.
type ChatTurnCompleteAction struct {
	// TurnID is the active turn.
	TurnID string `json:"turnId"`
	// Duration is the turn's length in milliseconds, by the producer's clock.
	Duration int64 `json:"duration"`
	// Meta is provider metadata.
	Meta map[string]any `json:"_meta,omitzero"`
}

// ChatTurnCancelledAction ends the active turn as cancelled.
type ChatTurnCancelledAction struct {
	// TurnID is the active turn.
	TurnID string `json:"turnId"`
	// Duration is the turn's length in milliseconds.
	Duration int64 `json:"duration"`
	// Meta is provider metadata.
	Meta map[string]any `json:"_meta,omitzero"`
}

// ChatErrorAction ends the active turn with an error part.
type ChatErrorAction struct {
	// TurnID is the active turn.
	TurnID string `json:"turnId"`
	// Duration is the turn's length in milliseconds.
	Duration int64 `json:"duration"`
	// Part is the error part appended to the turn.
	Part ErrorPart `json:"part"`
	// Meta is provider metadata.
	Meta map[string]any `json:"_meta,omitzero"`
}

// MarshalJSON encodes the action with its error part's kind.
func (a ChatErrorAction) MarshalJSON() ([]byte, error) {
	return marshalObject(chatErrorFields(a))
}

func chatErrorFields(a ChatErrorAction) []field {
	fs := []field{
		{"turnId", a.TurnID},
		{"duration", a.Duration},
		{"part", ResponsePart{Error: &a.Part}},
	}
	if a.Meta != nil {
		fs = append(fs, field{"_meta", a.Meta})
	}
	return fs
}

// ChatTurnResumeAction reopens the latest turn when it ended with a resumable
// error.
type ChatTurnResumeAction struct {
	// TurnID is the errored turn.
	TurnID string `json:"turnId"`
}

// ChatToolCallStartAction adds a streaming tool call to the active turn.
type ChatToolCallStartAction struct {
	// TurnID is the active turn.
	TurnID string `json:"turnId"`
	// ToolCallID identifies the call.
	ToolCallID string `json:"toolCallId"`
	// ToolName is the internal tool name.
	ToolName string `json:"toolName"`
	// DisplayName is the human-readable tool name.
	DisplayName string `json:"displayName"`
	// Intention says what the call intends to do.
	Intention string `json:"intention,omitempty"`
	// Contributor says who implements the tool.
	Contributor *ToolCallContributor `json:"contributor,omitempty"`
	// Meta is provider metadata.
	Meta map[string]any `json:"_meta,omitzero"`
}

// ChatToolCallDeltaAction streams partial parameters of a tool call.
type ChatToolCallDeltaAction struct {
	// TurnID is the active turn.
	TurnID string `json:"turnId"`
	// ToolCallID identifies the call.
	ToolCallID string `json:"toolCallId"`
	// Content is parameter text to append, if any.
	Content *string `json:"content,omitempty"`
	// InvocationMessage is an updated progress message.
	InvocationMessage *StringOrMarkdown `json:"invocationMessage,omitempty"`
	// Meta replaces the call's _meta when set.
	Meta map[string]any `json:"_meta,omitzero"`
}

// ChatToolCallReadyAction completes a call's parameters: the call runs when
// Confirmed is set, or waits for confirmation. Sent for a running call, it
// asks for confirmation again.
type ChatToolCallReadyAction struct {
	// TurnID is the active turn.
	TurnID string `json:"turnId"`
	// ToolCallID identifies the call.
	ToolCallID string `json:"toolCallId"`
	// InvocationMessage says what the tool will do or what needs approval.
	InvocationMessage StringOrMarkdown `json:"invocationMessage"`
	// ToolInput is the final input.
	ToolInput *ToolInput `json:"toolInput,omitempty"`
	// ConfirmationTitle is the short title of the confirmation prompt.
	ConfirmationTitle *StringOrMarkdown `json:"confirmationTitle,omitempty"`
	// RiskAssessment is the model judge's assessment, kept opaque.
	RiskAssessment json.RawMessage `json:"riskAssessment,omitempty"`
	// Edits are the file edits the call will make, kept opaque.
	Edits json.RawMessage `json:"edits,omitempty"`
	// Editable lets the client edit the input before confirming.
	Editable *bool `json:"editable,omitempty"`
	// Confirmed, when set, runs the call at once.
	Confirmed ConfirmationReason `json:"confirmed,omitempty"`
	// Options are the confirmation choices offered.
	Options []ConfirmationOption `json:"options,omitzero"`
	// Contributor refines the contributor; it cannot change a client owner.
	Contributor *ToolCallContributor `json:"contributor,omitempty"`
	// Intention replaces the provisional intention.
	Intention string `json:"intention,omitempty"`
	// Meta replaces the call's _meta when set.
	Meta map[string]any `json:"_meta,omitzero"`
}

// ChatToolCallConfirmedAction approves or denies a call waiting for
// confirmation.
type ChatToolCallConfirmedAction struct {
	// TurnID is the active turn.
	TurnID string `json:"turnId"`
	// ToolCallID identifies the call.
	ToolCallID string `json:"toolCallId"`
	// Approved approves (true) or denies (false) the call.
	Approved bool `json:"approved"`
	// Confirmed says how an approval was given (default not-needed).
	Confirmed ConfirmationReason `json:"confirmed,omitempty"`
	// Reason says why a denial was given (default denied).
	Reason CancellationReason `json:"reason,omitempty"`
	// EditedToolInput replaces an inline input on approval.
	EditedToolInput *string `json:"editedToolInput,omitempty"`
	// UserSuggestion is what the user suggests instead.
	UserSuggestion *Message `json:"userSuggestion,omitempty"`
	// ReasonMessage explains a denial.
	ReasonMessage *StringOrMarkdown `json:"reasonMessage,omitempty"`
	// SelectedOptionID names the confirmation option chosen.
	SelectedOptionID string `json:"selectedOptionId,omitempty"`
	// Meta replaces the call's _meta when set.
	Meta map[string]any `json:"_meta,omitzero"`
}

// ChatToolCallCompleteAction finishes a call with its result.
type ChatToolCallCompleteAction struct {
	// TurnID is the active turn.
	TurnID string `json:"turnId"`
	// ToolCallID identifies the call.
	ToolCallID string `json:"toolCallId"`
	// Result is the outcome.
	Result ToolCallResult `json:"result"`
	// RequiresResultConfirmation asks the client to approve the result.
	RequiresResultConfirmation bool `json:"requiresResultConfirmation,omitempty"`
	// Meta replaces the call's _meta when set.
	Meta map[string]any `json:"_meta,omitzero"`
}

// ChatToolCallResultConfirmedAction approves or denies a call's result.
type ChatToolCallResultConfirmedAction struct {
	// TurnID is the active turn.
	TurnID string `json:"turnId"`
	// ToolCallID identifies the call.
	ToolCallID string `json:"toolCallId"`
	// Approved approves the result.
	Approved bool `json:"approved"`
	// Meta replaces the call's _meta when set.
	Meta map[string]any `json:"_meta,omitzero"`
}

// ChatToolCallContentChangedAction replaces a running call's partial
// content.
type ChatToolCallContentChangedAction struct {
	// TurnID is the active turn.
	TurnID string `json:"turnId"`
	// ToolCallID identifies the call.
	ToolCallID string `json:"toolCallId"`
	// Content is the content so far.
	Content List[ToolResultContent] `json:"content"`
	// Meta replaces the call's _meta when set.
	Meta map[string]any `json:"_meta,omitzero"`
}

// ChatToolCallAuthRequiredAction pauses a running MCP call for
// authentication.
type ChatToolCallAuthRequiredAction struct {
	// TurnID is the active turn.
	TurnID string `json:"turnId"`
	// ToolCallID identifies the call.
	ToolCallID string `json:"toolCallId"`
	// Auth is the challenge, kept opaque.
	Auth json.RawMessage `json:"auth"`
	// Meta replaces the call's _meta when set.
	Meta map[string]any `json:"_meta,omitzero"`
}

// ChatToolCallAuthResolvedAction resumes a call paused for authentication.
type ChatToolCallAuthResolvedAction struct {
	// TurnID is the active turn.
	TurnID string `json:"turnId"`
	// ToolCallID identifies the call.
	ToolCallID string `json:"toolCallId"`
	// Meta replaces the call's _meta when set.
	Meta map[string]any `json:"_meta,omitzero"`
}

// ChatPendingMessageSetAction sets the steering message or adds (or
// replaces) a queued message.
type ChatPendingMessageSetAction struct {
	// Kind is steering or queued.
	Kind string `json:"kind"`
	// ID identifies the pending message.
	ID string `json:"id"`
	// Message is the message.
	Message Message `json:"message"`
}

// ChatPendingMessageRemovedAction removes a pending message.
type ChatPendingMessageRemovedAction struct {
	// Kind is steering or queued.
	Kind string `json:"kind"`
	// ID identifies the pending message.
	ID string `json:"id"`
}

// ChatQueuedMessagesReorderedAction reorders the queued messages.
type ChatQueuedMessagesReorderedAction struct {
	// Order lists queued message ids in their new order; unknown ids are
	// ignored and unlisted messages keep their order at the end.
	Order List[string] `json:"order"`
}

// ChatInputRequestedAction adds an input request to the active turn, or
// replaces the open one with the same id.
type ChatInputRequestedAction struct {
	// Request is the request.
	Request ChatInputRequest `json:"request"`
}

// ChatInputAnswerChangedAction sets or clears one draft answer.
type ChatInputAnswerChangedAction struct {
	// RequestID identifies the request.
	RequestID string `json:"requestId"`
	// QuestionID identifies the question.
	QuestionID string `json:"questionId"`
	// Answer is the answer; nil clears it.
	Answer *ChatInputAnswer `json:"answer,omitempty"`
}

// ChatInputCompletedAction completes an input request.
type ChatInputCompletedAction struct {
	// RequestID identifies the request.
	RequestID string `json:"requestId"`
	// Response is accept, decline or cancel.
	Response InputResponse `json:"response"`
	// Answers override the drafts question by question.
	Answers map[string]ChatInputAnswer `json:"answers,omitzero"`
}

// ChatTruncatedAction drops the turns after TurnID (all turns when empty)
// and any active turn.
type ChatTruncatedAction struct {
	// TurnID is the last turn kept; empty clears all turns.
	TurnID string `json:"turnId,omitempty"`
}

// ChatTurnsLoadedAction prepends older turns.
type ChatTurnsLoadedAction struct {
	// Turns are the older turns, oldest first.
	Turns List[Turn] `json:"turns"`
	// TurnsNextCursor is the cursor for still older turns, if any.
	TurnsNextCursor string `json:"turnsNextCursor,omitempty"`
}

// ChatActivityChangedAction sets or clears a chat's activity.
type ChatActivityChangedAction struct {
	// Activity is the new activity; empty clears it.
	Activity string `json:"activity,omitempty"`
}

// ChatDraftChangedAction sets or clears a chat's draft.
type ChatDraftChangedAction struct {
	// Draft is the new draft; nil clears it.
	Draft *Message `json:"draft,omitempty"`
}

// ChatWorkingDirectorySetAction adds a directory to a chat's subset.
type ChatWorkingDirectorySetAction struct {
	// Directory is the directory URI.
	Directory string `json:"directory"`
}

// ChatWorkingDirectoryRemovedAction removes a directory from a chat's
// subset.
type ChatWorkingDirectoryRemovedAction struct {
	// Directory is the directory URI.
	Directory string `json:"directory"`
}

// ChatIsReadChangedAction sets or clears a chat's IsRead flag.
type ChatIsReadChangedAction struct {
	// IsRead is the new flag.
	IsRead bool `json:"isRead"`
}

// ChatIsArchivedChangedAction sets or clears a chat's IsArchived flag.
type ChatIsArchivedChangedAction struct {
	// IsArchived is the new flag.
	IsArchived bool `json:"isArchived"`
}

// ChatBackgroundWorkSetAction adds background work, or replaces the entry
// with the same id.
type ChatBackgroundWorkSetAction struct {
	// Work is the entry.
	Work BackgroundWork `json:"work"`
}

// ChatBackgroundWorkRemovedAction removes background work.
type ChatBackgroundWorkRemovedAction struct {
	// ID identifies the entry.
	ID string `json:"id"`
}

// ActionType implements ActionBody.
func (*ChatTurnStartedAction) ActionType() ActionType { return ActionChatTurnStarted }

// ActionType implements ActionBody.
func (*ChatDeltaAction) ActionType() ActionType { return ActionChatDelta }

// ActionType implements ActionBody.
func (*ChatResponsePartAction) ActionType() ActionType { return ActionChatResponsePart }

// ActionType implements ActionBody.
func (*ChatReasoningAction) ActionType() ActionType { return ActionChatReasoning }

// ActionType implements ActionBody.
func (*ChatUsageAction) ActionType() ActionType { return ActionChatUsage }

// ActionType implements ActionBody.
func (*ChatTurnCompleteAction) ActionType() ActionType { return ActionChatTurnComplete }

// ActionType implements ActionBody.
func (*ChatTurnCancelledAction) ActionType() ActionType { return ActionChatTurnCancelled }

// ActionType implements ActionBody.
func (*ChatErrorAction) ActionType() ActionType { return ActionChatError }

// ActionType implements ActionBody.
func (*ChatTurnResumeAction) ActionType() ActionType { return ActionChatTurnResume }

// ActionType implements ActionBody.
func (*ChatToolCallStartAction) ActionType() ActionType { return ActionChatToolCallStart }

// ActionType implements ActionBody.
func (*ChatToolCallDeltaAction) ActionType() ActionType { return ActionChatToolCallDelta }

// ActionType implements ActionBody.
func (*ChatToolCallReadyAction) ActionType() ActionType { return ActionChatToolCallReady }

// ActionType implements ActionBody.
func (*ChatToolCallConfirmedAction) ActionType() ActionType { return ActionChatToolCallConfirmed }

// ActionType implements ActionBody.
func (*ChatToolCallCompleteAction) ActionType() ActionType { return ActionChatToolCallComplete }

// ActionType implements ActionBody.
func (*ChatToolCallResultConfirmedAction) ActionType() ActionType {
	return ActionChatToolCallResultConfirmed
}

// ActionType implements ActionBody.
func (*ChatToolCallContentChangedAction) ActionType() ActionType {
	return ActionChatToolCallContentChanged
}

// ActionType implements ActionBody.
func (*ChatToolCallAuthRequiredAction) ActionType() ActionType {
	return ActionChatToolCallAuthRequired
}

// ActionType implements ActionBody.
func (*ChatToolCallAuthResolvedAction) ActionType() ActionType {
	return ActionChatToolCallAuthResolved
}

// ActionType implements ActionBody.
func (*ChatPendingMessageSetAction) ActionType() ActionType { return ActionChatPendingMessageSet }

// ActionType implements ActionBody.
func (*ChatPendingMessageRemovedAction) ActionType() ActionType {
	return ActionChatPendingMessageRemoved
}

// ActionType implements ActionBody.
func (*ChatQueuedMessagesReorderedAction) ActionType() ActionType {
	return ActionChatQueuedMessagesReordered
}

// ActionType implements ActionBody.
func (*ChatInputRequestedAction) ActionType() ActionType { return ActionChatInputRequested }

// ActionType implements ActionBody.
func (*ChatInputAnswerChangedAction) ActionType() ActionType { return ActionChatInputAnswerChanged }

// ActionType implements ActionBody.
func (*ChatInputCompletedAction) ActionType() ActionType { return ActionChatInputCompleted }

// ActionType implements ActionBody.
func (*ChatTruncatedAction) ActionType() ActionType { return ActionChatTruncated }

// ActionType implements ActionBody.
func (*ChatTurnsLoadedAction) ActionType() ActionType { return ActionChatTurnsLoaded }

// ActionType implements ActionBody.
func (*ChatActivityChangedAction) ActionType() ActionType { return ActionChatActivityChanged }

// ActionType implements ActionBody.
func (*ChatDraftChangedAction) ActionType() ActionType { return ActionChatDraftChanged }

// ActionType implements ActionBody.
func (*ChatWorkingDirectorySetAction) ActionType() ActionType {
	return ActionChatWorkingDirectorySet
}

// ActionType implements ActionBody.
func (*ChatWorkingDirectoryRemovedAction) ActionType() ActionType {
	return ActionChatWorkingDirectoryRemoved
}

// ActionType implements ActionBody.
func (*ChatIsReadChangedAction) ActionType() ActionType { return ActionChatIsReadChanged }

// ActionType implements ActionBody.
func (*ChatIsArchivedChangedAction) ActionType() ActionType { return ActionChatIsArchivedChanged }

// ActionType implements ActionBody.
func (*ChatBackgroundWorkSetAction) ActionType() ActionType { return ActionChatBackgroundWorkSet }

// ActionType implements ActionBody.
func (*ChatBackgroundWorkRemovedAction) ActionType() ActionType {
	return ActionChatBackgroundWorkRemoved
}
