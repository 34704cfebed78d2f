package replica

import (
	"fmt"
	"slices"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/engine"
)

// Step is what a client's chat action does once it is in the chat's log,
// besides being applied and published.
type Step int

const (
	// Apply is an action that is applied alone: a draft, read or archived,
	// the queue reordered, a pending message removed.
	Apply Step = iota
	// Begin begins the turn the action starts: the chat wakes its agent.
	Begin
	// Resume begins again the latest turn, which ended with an error that
	// can be resumed, with its message (Rules.Resume).
	Resume
	// Stop stops the active turn, which the action cancelled.
	Stop
	// Pend sets a pending message: a steering one goes to the turn that
	// runs, a queued one starts when the chat is idle.
	Pend
	// Answer hands an answer to the turn that waits for it: to a
	// question, a confirmation, a client tool's result.
	Answer
)

// Rules are what a chat takes beyond the actions every chat takes.
type Rules struct {
	// Resume takes chat/turnResume of the latest turn when it ended with
	// an error that can be resumed (a turn its log showed interrupted).
	Resume bool
	// ClientTools takes chat/toolCallComplete of a running call of a
	// client's tool, from that client.
	ClientTools bool
}

// Refusal is why Decide refuses an action: one sentence, for the client.
type Refusal struct{ Reason string }

// Error returns the reason.
func (r *Refusal) Error() string { return r.Reason }

func refuse(format string, args ...any) (Step, error) {
	return Apply, &Refusal{Reason: fmt.Sprintf(format, args...)}
}

// Decide answers the step a client's action takes on the chat s, or a
// *Refusal saying why s does not take it. origin is the client that sent
// it, nil for an in-process caller. Decide is pure: the same arguments
// always answer the same.
func Decide(s ahp.ChatState, a ahp.Action, r Rules, origin *engine.Origin) (Step, error) {
	at := s.ActiveTurn
	switch b := a.Body.(type) {
	case *ahp.ChatTurnStartedAction:
		switch {
		case b.TurnID == "" || b.Message.Origin.Kind != ahp.MessageUser:
			return refuse("a turn needs a turnId and the person's message")
		case at != nil:
			return refuse("a turn is in progress")
		case b.QueuedMessageID != "":
			return refuse("the host starts queued messages itself")
		case slices.ContainsFunc(s.Turns, func(t ahp.Turn) bool { return t.ID == b.TurnID }): // among the turns held
			return refuse("turn %q exists", b.TurnID)
		}
		return Begin, nil
	case *ahp.ChatTurnResumeAction:
		if _, ok := resumable(s, b.TurnID); !r.Resume || !ok {
			return refuse("turn %q is not the latest turn, ended with an error that can be resumed", b.TurnID)
		}
		return Resume, nil
	case *ahp.ChatTurnCancelledAction:
		if at == nil || at.ID != b.TurnID {
			return refuse("turn %q is not in progress", b.TurnID)
		}
		return Stop, nil
	case *ahp.ChatPendingMessageSetAction:
		// A client's message is the person's; the host's own may be an
		// agent's, as the wake's queueing of a main chat's message.
		theirs := origin == nil || b.Message.Origin.Kind == ahp.MessageUser
		if b.ID == "" || (b.Kind != ahp.PendingQueued && b.Kind != ahp.PendingSteering) || !theirs {
			return refuse("a pending message needs an id, the kind queued or steering, and the person's message")
		}
		return Pend, nil
	case *ahp.ChatPendingMessageRemovedAction:
		switch {
		case b.Kind == ahp.PendingSteering && s.SteeringMessage != nil && s.SteeringMessage.ID == b.ID:
		case b.Kind == ahp.PendingQueued && slices.ContainsFunc(s.QueuedMessages, func(m ahp.PendingMessage) bool { return m.ID == b.ID }):
		default:
			return refuse("no %s message %q is waiting", b.Kind, b.ID)
		}
		return Apply, nil
	case *ahp.ChatQueuedMessagesReorderedAction, *ahp.ChatDraftChangedAction, *ahp.ChatIsReadChangedAction, *ahp.ChatIsArchivedChangedAction:
		return Apply, nil
	case *ahp.ChatInputAnswerChangedAction, *ahp.ChatInputCompletedAction, *ahp.ChatToolCallConfirmedAction:
		return answer(s, a, origin)
	case *ahp.ChatToolCallCompleteAction:
		if r.ClientTools {
			return answer(s, a, origin)
		}
	}
	return refuse("this chat does not take %s", a.Type)
}

// answer decides an answer: it must answer what the active turn waits
// for.
func answer(s ahp.ChatState, a ahp.Action, origin *engine.Origin) (Step, error) {
	at := s.ActiveTurn
	switch b := a.Body.(type) {
	case *ahp.ChatInputAnswerChangedAction:
		if !at.OpenInputRequest(b.RequestID) {
			return refuse("no open input request %q", b.RequestID)
		}
	case *ahp.ChatInputCompletedAction:
		if !at.OpenInputRequest(b.RequestID) {
			return refuse("no open input request %q", b.RequestID)
		}
	case *ahp.ChatToolCallConfirmedAction:
		if tc := at.ToolCall(b.TurnID, b.ToolCallID); tc == nil || tc.Status != ahp.ToolCallStatusPendingConfirmation {
			return refuse("tool call %q does not wait for a confirmation", b.ToolCallID)
		}
	case *ahp.ChatToolCallCompleteAction:
		tc := at.ToolCall(b.TurnID, b.ToolCallID)
		if tc == nil || tc.Status != ahp.ToolCallStatusRunning || tc.Contributor == nil || tc.Contributor.Kind != ahp.ContributorClient {
			return refuse("tool call %q is not a running call of a client's tool", b.ToolCallID)
		}
		if origin != nil && origin.ClientID != tc.Contributor.ClientID {
			return refuse("only client %q completes tool call %q", tc.Contributor.ClientID, b.ToolCallID)
		}
	}
	return Answer, nil
}

// AnswerTo is the input request or tool call an answer answers (an
// answer to a question, a confirmation, a client tool's result), "" for
// any other action.
func AnswerTo(a ahp.Action) string {
	switch b := a.Body.(type) {
	case *ahp.ChatInputAnswerChangedAction:
		return b.RequestID
	case *ahp.ChatInputCompletedAction:
		return b.RequestID
	case *ahp.ChatToolCallConfirmedAction:
		return b.ToolCallID
	case *ahp.ChatToolCallCompleteAction:
		return b.ToolCallID
	}
	return ""
}

// resumable returns the chat's latest turn when it is turnID and
// chat/turnResume may begin it again: no turn is active and its last part
// is an error that can be resumed (a turn the log showed interrupted).
func resumable(s ahp.ChatState, turnID string) (ahp.Turn, bool) {
	if s.ActiveTurn != nil || len(s.Turns) == 0 {
		return ahp.Turn{}, false
	}
	last := s.Turns[len(s.Turns)-1]
	if last.ID != turnID || last.State != ahp.TurnStateError || len(last.ResponseParts) == 0 {
		return ahp.Turn{}, false
	}
	tail := last.ResponseParts[len(last.ResponseParts)-1]
	return last, tail.Error != nil && tail.Error.Resumable
}
