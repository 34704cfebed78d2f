package ahp

import (
	"encoding/json"
	"time"
)

// Constructors for the actions a server emits. Each returns a ready Action;
// for fields a constructor does not take, build the body and call NewAction.

// AgentsChanged returns root/agentsChanged.
func AgentsChanged(agents []AgentInfo) Action {
	return NewAction(&RootAgentsChangedAction{Agents: agents})
}

// ActiveSessionsChanged returns root/activeSessionsChanged.
func ActiveSessionsChanged(n int64) Action {
	return NewAction(&RootActiveSessionsChangedAction{ActiveSessions: n})
}

// SessionReady returns session/ready.
func SessionReady() Action { return NewAction(&SessionReadyAction{}) }

// CreationFailed returns session/creationFailed.
func CreationFailed(err ErrorInfo) Action {
	return NewAction(&SessionCreationFailedAction{Error: err})
}

// TitleChanged returns session/titleChanged.
func TitleChanged(title string) Action {
	return NewAction(&SessionTitleChangedAction{Title: title})
}

// ChatAdded returns session/chatAdded.
func ChatAdded(summary ChatSummary) Action {
	return NewAction(&SessionChatAddedAction{Summary: summary})
}

// ChatRemoved returns session/chatRemoved.
func ChatRemoved(chat string) Action {
	return NewAction(&SessionChatRemovedAction{Chat: chat})
}

// ChatUpdated returns session/chatUpdated.
func ChatUpdated(chat string, changes PartialChatSummary) Action {
	return NewAction(&SessionChatUpdatedAction{Chat: chat, Changes: changes})
}

// DefaultChatChanged returns session/defaultChatChanged; an empty chat clears
// the default.
func DefaultChatChanged(chat string) Action {
	return NewAction(&SessionDefaultChatChangedAction{DefaultChat: chat})
}

// SessionActivityChanged returns session/activityChanged; an empty activity
// clears it.
func SessionActivityChanged(activity string) Action {
	return NewAction(&SessionActivityChangedAction{Activity: activity})
}

// IsReadChanged returns session/isReadChanged.
func IsReadChanged(isRead bool) Action {
	return NewAction(&SessionIsReadChangedAction{IsRead: isRead})
}

// IsArchivedChanged returns session/isArchivedChanged.
func IsArchivedChanged(isArchived bool) Action {
	return NewAction(&SessionIsArchivedChangedAction{IsArchived: isArchived})
}

// ServerToolsChanged returns session/serverToolsChanged.
func ServerToolsChanged(tools []ToolDefinition) Action {
	return NewAction(&SessionServerToolsChangedAction{Tools: tools})
}

// ActiveClientSet returns session/activeClientSet.
func ActiveClientSet(client SessionActiveClient) Action {
	return NewAction(&SessionActiveClientSetAction{ActiveClient: client})
}

// ActiveClientRemoved returns session/activeClientRemoved.
func ActiveClientRemoved(clientID string) Action {
	return NewAction(&SessionActiveClientRemovedAction{ClientID: clientID})
}

// InputNeededSet returns session/inputNeededSet.
func InputNeededSet(req SessionInputRequest) Action {
	return NewAction(&SessionInputNeededSetAction{Request: req})
}

// InputNeededRemoved returns session/inputNeededRemoved.
func InputNeededRemoved(id string) Action {
	return NewAction(&SessionInputNeededRemovedAction{ID: id})
}

// SessionMetaChanged returns session/metaChanged.
func SessionMetaChanged(meta map[string]any) Action {
	return NewAction(&SessionMetaChangedAction{Meta: meta})
}

// TurnStarted returns chat/turnStarted.
func TurnStarted(turnID string, startedAt time.Time, msg Message) Action {
	return NewAction(&ChatTurnStartedAction{TurnID: turnID, StartedAt: FormatTime(startedAt), Message: msg})
}

// TurnStartedFromQueue returns chat/turnStarted consuming the pending message
// queuedID.
func TurnStartedFromQueue(turnID string, startedAt time.Time, queuedID string, msg Message) Action {
	return NewAction(&ChatTurnStartedAction{
		TurnID: turnID, StartedAt: FormatTime(startedAt), Message: msg, QueuedMessageID: queuedID,
	})
}

// AppendPart returns chat/responsePart.
func AppendPart(turnID string, part ResponsePart) Action {
	return NewAction(&ChatResponsePartAction{TurnID: turnID, Part: part})
}

// Delta returns chat/delta: text appended to a markdown part.
func Delta(turnID, partID, text string) Action {
	return NewAction(&ChatDeltaAction{TurnID: turnID, PartID: partID, Content: text})
}

// Reasoning returns chat/reasoning: text appended to a reasoning part.
func Reasoning(turnID, partID, text string) Action {
	return NewAction(&ChatReasoningAction{TurnID: turnID, PartID: partID, Content: text})
}

// Usage returns chat/usage.
func Usage(turnID string, usage UsageInfo) Action {
	return NewAction(&ChatUsageAction{TurnID: turnID, Usage: usage})
}

// TurnComplete returns chat/turnComplete.
func TurnComplete(turnID string, d time.Duration) Action {
	return NewAction(&ChatTurnCompleteAction{TurnID: turnID, Duration: d.Milliseconds()})
}

// TurnCancelled returns chat/turnCancelled.
func TurnCancelled(turnID string, d time.Duration) Action {
	return NewAction(&ChatTurnCancelledAction{TurnID: turnID, Duration: d.Milliseconds()})
}

// TurnFailed returns chat/error: the turn ends with an error part, which
// chat/turnResume may reopen when resumable.
func TurnFailed(turnID string, d time.Duration, err ErrorInfo, resumable bool) Action {
	return NewAction(&ChatErrorAction{
		TurnID: turnID, Duration: d.Milliseconds(), Part: ErrorPart{Error: err, Resumable: resumable},
	})
}

// TurnResume returns chat/turnResume.
func TurnResume(turnID string) Action {
	return NewAction(&ChatTurnResumeAction{TurnID: turnID})
}

// ToolCallStart returns chat/toolCallStart for a server tool.
func ToolCallStart(turnID, toolCallID, toolName, displayName string) Action {
	return NewAction(&ChatToolCallStartAction{
		TurnID: turnID, ToolCallID: toolCallID, ToolName: toolName, DisplayName: displayName,
	})
}

// ToolCallDelta returns chat/toolCallDelta appending parameter text.
func ToolCallDelta(turnID, toolCallID, content string) Action {
	return NewAction(&ChatToolCallDeltaAction{TurnID: turnID, ToolCallID: toolCallID, Content: &content})
}

// ToolCallReady returns chat/toolCallReady. With confirmed set (e.g.
// ConfirmedNotNeeded) the call runs at once; empty asks for confirmation.
func ToolCallReady(turnID, toolCallID string, invocation StringOrMarkdown, confirmed ConfirmationReason) Action {
	return NewAction(&ChatToolCallReadyAction{
		TurnID: turnID, ToolCallID: toolCallID, InvocationMessage: invocation, Confirmed: confirmed,
	})
}

// ToolCallConfirmed returns chat/toolCallConfirmed with a user-action
// approval, or a plain denial.
func ToolCallConfirmed(turnID, toolCallID string, approved bool) Action {
	body := &ChatToolCallConfirmedAction{TurnID: turnID, ToolCallID: toolCallID, Approved: approved}
	if approved {
		body.Confirmed = ConfirmedUserAction
	} else {
		body.Reason = CancelDenied
	}
	return NewAction(body)
}

// ToolCallComplete returns chat/toolCallComplete.
func ToolCallComplete(turnID, toolCallID string, result ToolCallResult) Action {
	return NewAction(&ChatToolCallCompleteAction{TurnID: turnID, ToolCallID: toolCallID, Result: result})
}

// ToolCallContentChanged returns chat/toolCallContentChanged.
func ToolCallContentChanged(turnID, toolCallID string, content []ToolResultContent) Action {
	return NewAction(&ChatToolCallContentChangedAction{TurnID: turnID, ToolCallID: toolCallID, Content: content})
}

// ToolCallAuthRequired returns chat/toolCallAuthRequired with an opaque MCP
// authentication challenge.
func ToolCallAuthRequired(turnID, toolCallID string, auth json.RawMessage) Action {
	return NewAction(&ChatToolCallAuthRequiredAction{TurnID: turnID, ToolCallID: toolCallID, Auth: auth})
}

// ToolCallAuthResolved returns chat/toolCallAuthResolved.
func ToolCallAuthResolved(turnID, toolCallID string) Action {
	return NewAction(&ChatToolCallAuthResolvedAction{TurnID: turnID, ToolCallID: toolCallID})
}

// PendingMessageSet returns chat/pendingMessageSet; kind is PendingSteering
// or PendingQueued.
func PendingMessageSet(kind, id string, msg Message) Action {
	return NewAction(&ChatPendingMessageSetAction{Kind: kind, ID: id, Message: msg})
}

// PendingMessageRemoved returns chat/pendingMessageRemoved.
func PendingMessageRemoved(kind, id string) Action {
	return NewAction(&ChatPendingMessageRemovedAction{Kind: kind, ID: id})
}

// QueuedMessagesReordered returns chat/queuedMessagesReordered.
func QueuedMessagesReordered(order []string) Action {
	return NewAction(&ChatQueuedMessagesReorderedAction{Order: order})
}

// InputRequested returns chat/inputRequested.
func InputRequested(req ChatInputRequest) Action {
	return NewAction(&ChatInputRequestedAction{Request: req})
}

// InputCompleted returns chat/inputCompleted.
func InputCompleted(requestID string, response InputResponse, answers map[string]ChatInputAnswer) Action {
	return NewAction(&ChatInputCompletedAction{RequestID: requestID, Response: response, Answers: answers})
}

// ChatActivityChanged returns chat/activityChanged; an empty activity clears
// it.
func ChatActivityChanged(activity string) Action {
	return NewAction(&ChatActivityChangedAction{Activity: activity})
}

// Truncated returns chat/truncated keeping the turns up to turnID; an empty
// turnID clears all turns.
func Truncated(turnID string) Action {
	return NewAction(&ChatTruncatedAction{TurnID: turnID})
}

// TurnsLoaded returns chat/turnsLoaded.
func TurnsLoaded(turns []Turn, nextCursor string) Action {
	return NewAction(&ChatTurnsLoadedAction{Turns: turns, TurnsNextCursor: nextCursor})
}

// DraftChanged returns chat/draftChanged; nil clears the draft.
func DraftChanged(draft *Message) Action {
	return NewAction(&ChatDraftChangedAction{Draft: draft})
}

// BackgroundWorkSet returns chat/backgroundWorkSet.
func BackgroundWorkSet(work BackgroundWork) Action {
	return NewAction(&ChatBackgroundWorkSetAction{Work: work})
}

// BackgroundWorkRemoved returns chat/backgroundWorkRemoved.
func BackgroundWorkRemoved(id string) Action {
	return NewAction(&ChatBackgroundWorkRemovedAction{ID: id})
}

// ResourceWatchChanged returns resourceWatch/changed.
func ResourceWatchChanged(changes ...ResourceChange) Action {
	return NewAction(&ResourceWatchChangedAction{Changes: ResourceChanges{Items: changes}})
}
