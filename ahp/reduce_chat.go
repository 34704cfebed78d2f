package ahp

import (
	"maps"
	"slices"
	"time"
)

// ApplyChat applies a to a chat's state and returns the new state. It never
// modifies s (the result shares what did not change) and never reads the
// clock: modifiedAt follows the turn actions (startedAt when a turn starts,
// startedAt + duration when it ends). An action of another channel, of an
// unknown type, or naming a turn, part or tool call that is not there
// returns s unchanged.
func ApplyChat(s ChatState, a Action) ChatState {
	switch b := a.body().(type) {
	case *ChatTurnStartedAction:
		return turnStarted(s, b)
	case *ChatDeltaAction:
		return updatePart(s, b.TurnID, b.PartID, func(p ResponsePart) (ResponsePart, bool) {
			if p.Markdown == nil {
				return p, false
			}
			m := *p.Markdown
			m.Content += b.Content
			return ResponsePart{Markdown: &m}, true
		})
	case *ChatReasoningAction:
		return updatePart(s, b.TurnID, b.PartID, func(p ResponsePart) (ResponsePart, bool) {
			if p.Reasoning == nil {
				return p, false
			}
			r := *p.Reasoning
			r.Content += b.Content
			return ResponsePart{Reasoning: &r}, true
		})
	case *ChatResponsePartAction:
		if !activeTurnIs(s, b.TurnID) || b.Part.Error != nil {
			return s
		}
		at := *s.ActiveTurn
		at.ResponseParts = appendTo(at.ResponseParts, b.Part)
		s.ActiveTurn = &at
		return s
	case *ChatUsageAction:
		if !activeTurnIs(s, b.TurnID) {
			return s
		}
		at := *s.ActiveTurn
		usage := b.Usage
		at.Usage = &usage
		s.ActiveTurn = &at
		return s
	case *ChatTurnCompleteAction:
		return endTurn(s, b.TurnID, b.Duration, TurnStateComplete, 0, nil)
	case *ChatTurnCancelledAction:
		return endTurn(s, b.TurnID, b.Duration, TurnStateCancelled, 0, nil)
	case *ChatErrorAction:
		part := b.Part
		return endTurn(s, b.TurnID, b.Duration, TurnStateError, StatusError, &part)
	case *ChatTurnResumeAction:
		return turnResume(s, b)
	case *ChatActivityChangedAction:
		s.Activity = b.Activity
		return s
	case *ChatWorkingDirectorySetAction:
		if slices.Contains(s.WorkingDirectories, b.Directory) {
			return s
		}
		s.WorkingDirectories = appendTo(s.WorkingDirectories, b.Directory)
		return s
	case *ChatWorkingDirectoryRemovedAction:
		i := slices.Index(s.WorkingDirectories, b.Directory)
		if i < 0 {
			return s
		}
		s.WorkingDirectories = slices.Delete(slices.Clone(s.WorkingDirectories), i, i+1)
		return s
	case *ChatIsReadChangedAction:
		s.Status = withFlag(s.Status, StatusIsRead, b.IsRead)
		return s
	case *ChatIsArchivedChangedAction:
		s.Status = withFlag(s.Status, StatusIsArchived, b.IsArchived)
		return s
	case *ChatBackgroundWorkSetAction:
		i := slices.IndexFunc(s.BackgroundWork, func(w BackgroundWork) bool { return w.ID == b.Work.ID })
		if i < 0 {
			s.BackgroundWork = appendTo(s.BackgroundWork, b.Work)
		} else {
			s.BackgroundWork = slices.Clone(s.BackgroundWork)
			s.BackgroundWork[i] = b.Work
		}
		return s
	case *ChatBackgroundWorkRemovedAction:
		i := slices.IndexFunc(s.BackgroundWork, func(w BackgroundWork) bool { return w.ID == b.ID })
		if i < 0 {
			return s
		}
		s.BackgroundWork = slices.Delete(slices.Clone(s.BackgroundWork), i, i+1)
		return s
	case *ChatToolCallStartAction:
		if !activeTurnIs(s, b.TurnID) {
			return s
		}
		tc := &ToolCallState{
			Status: ToolCallStatusStreaming, ToolCallID: b.ToolCallID, ToolName: b.ToolName,
			DisplayName: b.DisplayName, Intention: b.Intention, Contributor: b.Contributor, Meta: b.Meta,
		}
		at := *s.ActiveTurn
		at.ResponseParts = appendTo(at.ResponseParts, ResponsePart{ToolCall: tc})
		s.ActiveTurn = &at
		return s
	case *ChatToolCallDeltaAction:
		return updateToolCall(s, b.TurnID, b.ToolCallID, false, func(tc ToolCallState) (ToolCallState, bool) {
			return toolCallDelta(tc, b)
		})
	case *ChatToolCallReadyAction:
		return updateToolCall(s, b.TurnID, b.ToolCallID, true, func(tc ToolCallState) (ToolCallState, bool) {
			return toolCallReady(tc, b)
		})
	case *ChatToolCallConfirmedAction:
		return updateToolCall(s, b.TurnID, b.ToolCallID, true, func(tc ToolCallState) (ToolCallState, bool) {
			return toolCallConfirmed(tc, b)
		})
	case *ChatToolCallCompleteAction:
		return updateToolCall(s, b.TurnID, b.ToolCallID, true, func(tc ToolCallState) (ToolCallState, bool) {
			return toolCallComplete(tc, b)
		})
	case *ChatToolCallResultConfirmedAction:
		return updateToolCall(s, b.TurnID, b.ToolCallID, true, func(tc ToolCallState) (ToolCallState, bool) {
			return toolCallResultConfirmed(tc, b)
		})
	case *ChatToolCallContentChangedAction:
		return updateToolCall(s, b.TurnID, b.ToolCallID, false, func(tc ToolCallState) (ToolCallState, bool) {
			if tc.Status != ToolCallStatusRunning {
				return tc, false
			}
			if b.Meta != nil {
				tc.Meta = b.Meta
			}
			tc.Content = slices.Clone([]ToolResultContent(b.Content))
			if tc.Content == nil {
				tc.Content = []ToolResultContent{}
			}
			return tc, true
		})
	case *ChatToolCallAuthRequiredAction:
		return updateToolCall(s, b.TurnID, b.ToolCallID, true, func(tc ToolCallState) (ToolCallState, bool) {
			if tc.Status != ToolCallStatusRunning || tc.Contributor == nil || tc.Contributor.Kind != ContributorMCP {
				return tc, false
			}
			next := baseOf(tc, b.Meta)
			next.Status = ToolCallStatusAuthRequired
			next.InvocationMessage, next.ToolInput = tc.InvocationMessage, tc.ToolInput
			next.Confirmed, next.SelectedOption = tc.Confirmed, tc.SelectedOption
			next.Content = tc.Content
			next.Auth = b.Auth
			return next, true
		})
	case *ChatToolCallAuthResolvedAction:
		return updateToolCall(s, b.TurnID, b.ToolCallID, true, func(tc ToolCallState) (ToolCallState, bool) {
			if tc.Status != ToolCallStatusAuthRequired {
				return tc, false
			}
			next := baseOf(tc, b.Meta)
			next.Status = ToolCallStatusRunning
			next.InvocationMessage, next.ToolInput = tc.InvocationMessage, tc.ToolInput
			next.Confirmed, next.SelectedOption = tc.Confirmed, tc.SelectedOption
			next.Content = tc.Content
			return next, true
		})
	case *ChatTruncatedAction:
		return truncated(s, b.TurnID)
	case *ChatTurnsLoadedAction:
		have := make(map[string]bool, len(s.Turns))
		for _, t := range s.Turns {
			have[t.ID] = true
		}
		turns := make(List[Turn], 0, len(b.Turns)+len(s.Turns))
		for _, t := range b.Turns {
			if !have[t.ID] {
				turns = append(turns, t)
			}
		}
		s.Turns = append(turns, s.Turns...)
		s.TurnsNextCursor = b.TurnsNextCursor
		return s
	case *ChatInputRequestedAction:
		return inputRequested(s, b.Request)
	case *ChatInputAnswerChangedAction:
		return updateOpenInput(s, b.RequestID, false, func(p InputRequestPart) InputRequestPart {
			answers := maps.Clone(p.Request.Answers)
			if answers == nil {
				answers = map[string]ChatInputAnswer{}
			}
			if b.Answer == nil {
				delete(answers, b.QuestionID)
			} else {
				answers[b.QuestionID] = *b.Answer
			}
			if len(answers) == 0 {
				answers = nil
			}
			p.Request.Answers = answers
			return p
		})
	case *ChatInputCompletedAction:
		return updateOpenInput(s, b.RequestID, true, func(p InputRequestPart) InputRequestPart {
			answers := maps.Clone(p.Request.Answers)
			if answers == nil {
				answers = map[string]ChatInputAnswer{}
			}
			maps.Copy(answers, b.Answers)
			if len(answers) == 0 {
				answers = nil
			}
			p.Request.Answers = answers
			p.Response = b.Response
			return p
		})
	case *ChatPendingMessageSetAction:
		entry := PendingMessage{ID: b.ID, Message: b.Message}
		switch b.Kind {
		case PendingSteering:
			s.SteeringMessage = &entry
		case PendingQueued:
			i := slices.IndexFunc(s.QueuedMessages, func(m PendingMessage) bool { return m.ID == b.ID })
			if i < 0 {
				s.QueuedMessages = appendTo(s.QueuedMessages, entry)
			} else {
				s.QueuedMessages = slices.Clone(s.QueuedMessages)
				s.QueuedMessages[i] = entry
			}
		}
		return s
	case *ChatPendingMessageRemovedAction:
		switch b.Kind {
		case PendingSteering:
			if s.SteeringMessage != nil && s.SteeringMessage.ID == b.ID {
				s.SteeringMessage = nil
			}
		case PendingQueued:
			s.QueuedMessages = withoutQueued(s.QueuedMessages, b.ID)
		}
		return s
	case *ChatQueuedMessagesReorderedAction:
		if s.QueuedMessages == nil {
			return s
		}
		s.QueuedMessages = reorder(s.QueuedMessages, b.Order)
		return s
	case *ChatDraftChangedAction:
		s.Draft = b.Draft
		return s
	}
	return s
}

func turnStarted(s ChatState, b *ChatTurnStartedAction) ChatState {
	s.ActiveTurn = &ActiveTurn{
		ID: b.TurnID, StartedAt: b.StartedAt, Message: b.Message, ResponseParts: List[ResponsePart]{},
	}
	s.Status = chatStatus(s, 0) &^ StatusIsRead
	s.ModifiedAt = b.StartedAt
	if b.QueuedMessageID != "" {
		if s.SteeringMessage != nil && s.SteeringMessage.ID == b.QueuedMessageID {
			s.SteeringMessage = nil
		}
		s.QueuedMessages = withoutQueued(s.QueuedMessages, b.QueuedMessageID)
	}
	return s
}

// endTurn moves the active turn into the history. Tool calls still in
// flight are cancelled (skipped); errPart, when set, is appended last.
func endTurn(s ChatState, turnID string, duration int64, state TurnState, terminal SessionStatus, errPart *ErrorPart) ChatState {
	if !activeTurnIs(s, turnID) {
		return s
	}
	active := s.ActiveTurn
	parts := make(List[ResponsePart], 0, len(active.ResponseParts)+1)
	for _, p := range active.ResponseParts {
		if p.ToolCall == nil || p.ToolCall.Status.Terminal() || !p.ToolCall.known() {
			parts = append(parts, p)
			continue
		}
		tc := *p.ToolCall
		next := baseOf(tc, nil)
		next.Status = ToolCallStatusCancelled
		next.Reason = CancelSkipped
		next.InvocationMessage = tc.InvocationMessage
		if tc.Status != ToolCallStatusStreaming {
			next.ToolInput = tc.ToolInput
		}
		parts = append(parts, ResponsePart{ToolCall: &next})
	}
	if errPart != nil {
		parts = append(parts, ResponsePart{Error: errPart})
	}
	duration = max(duration, 0)
	turn := Turn{
		ID: active.ID, StartedAt: active.StartedAt, Duration: &duration, Message: active.Message,
		ResponseParts: parts, Usage: active.Usage, State: state,
	}
	s.ActiveTurn = nil
	s.Turns = appendTo(s.Turns, turn)
	if at, ok := addMillis(active.StartedAt, duration); ok {
		s.ModifiedAt = at
	}
	s.Status = chatStatus(s, terminal)
	return s
}

func turnResume(s ChatState, b *ChatTurnResumeAction) ChatState {
	if s.ActiveTurn != nil || len(s.Turns) == 0 {
		return s
	}
	last := s.Turns[len(s.Turns)-1]
	if last.ID != b.TurnID || last.State != TurnStateError || len(last.ResponseParts) == 0 {
		return s
	}
	if tail := last.ResponseParts[len(last.ResponseParts)-1]; tail.Error == nil || !tail.Error.Resumable {
		return s
	}
	startedAt := last.StartedAt
	if startedAt == "" {
		startedAt = s.ModifiedAt
	}
	s.Turns = s.Turns[: len(s.Turns)-1 : len(s.Turns)-1]
	s.ActiveTurn = &ActiveTurn{
		ID: last.ID, StartedAt: startedAt, Message: last.Message,
		ResponseParts: last.ResponseParts, Usage: last.Usage,
	}
	s.Status = chatStatus(s, 0) &^ StatusIsRead
	return s
}

func truncated(s ChatState, turnID string) ChatState {
	if turnID == "" {
		s.Turns = List[Turn]{}
		s.TurnsNextCursor = ""
	} else {
		i := slices.IndexFunc(s.Turns, func(t Turn) bool { return t.ID == turnID })
		if i < 0 {
			return s
		}
		s.Turns = s.Turns[: i+1 : i+1]
	}
	s.ActiveTurn = nil
	s.Status = chatStatus(s, 0)
	return s
}

func inputRequested(s ChatState, req ChatInputRequest) ChatState {
	if s.ActiveTurn == nil {
		return s
	}
	at := *s.ActiveTurn
	i := openInputIndex(at.ResponseParts, req.ID)
	if i < 0 {
		at.ResponseParts = appendTo(at.ResponseParts, ResponsePart{InputRequest: &InputRequestPart{Request: req}})
	} else {
		if req.Answers == nil {
			req.Answers = at.ResponseParts[i].InputRequest.Request.Answers
		}
		at.ResponseParts = slices.Clone(at.ResponseParts)
		at.ResponseParts[i] = ResponsePart{InputRequest: &InputRequestPart{Request: req}}
	}
	s.ActiveTurn = &at
	s.Status = chatStatus(s, 0) &^ StatusIsRead
	return s
}

// updateOpenInput replaces the unresolved input request part requestID of
// the active turn with f's result.
func updateOpenInput(s ChatState, requestID string, refresh bool, f func(InputRequestPart) InputRequestPart) ChatState {
	if s.ActiveTurn == nil {
		return s
	}
	i := openInputIndex(s.ActiveTurn.ResponseParts, requestID)
	if i < 0 {
		return s
	}
	at := *s.ActiveTurn
	at.ResponseParts = slices.Clone(at.ResponseParts)
	p := f(*at.ResponseParts[i].InputRequest)
	at.ResponseParts[i] = ResponsePart{InputRequest: &p}
	s.ActiveTurn = &at
	if refresh {
		s.Status = chatStatus(s, 0)
	}
	return s
}

func openInputIndex(parts []ResponsePart, requestID string) int {
	return slices.IndexFunc(parts, func(p ResponsePart) bool {
		return p.InputRequest != nil && p.InputRequest.Response == "" && p.InputRequest.Request.ID == requestID
	})
}

// updatePart replaces the first active-turn part whose id is partID with
// f's result, when f accepts the part.
func updatePart(s ChatState, turnID, partID string, f func(ResponsePart) (ResponsePart, bool)) ChatState {
	if !activeTurnIs(s, turnID) || partID == "" {
		return s
	}
	i := slices.IndexFunc(s.ActiveTurn.ResponseParts, func(p ResponsePart) bool { return p.id() == partID })
	if i < 0 {
		return s
	}
	next, ok := f(s.ActiveTurn.ResponseParts[i])
	if !ok {
		return s
	}
	at := *s.ActiveTurn
	at.ResponseParts = slices.Clone(at.ResponseParts)
	at.ResponseParts[i] = next
	s.ActiveTurn = &at
	return s
}

// updateToolCall replaces the tool call toolCallID of the active turn with
// f's result, when f accepts it; refresh recomputes the chat's status.
func updateToolCall(s ChatState, turnID, toolCallID string, refresh bool, f func(ToolCallState) (ToolCallState, bool)) ChatState {
	if !activeTurnIs(s, turnID) {
		return s
	}
	i := slices.IndexFunc(s.ActiveTurn.ResponseParts, func(p ResponsePart) bool {
		return p.ToolCall != nil && p.ToolCall.ToolCallID == toolCallID
	})
	if i < 0 {
		return s
	}
	next, ok := f(*s.ActiveTurn.ResponseParts[i].ToolCall)
	if !ok {
		return s
	}
	at := *s.ActiveTurn
	at.ResponseParts = slices.Clone(at.ResponseParts)
	at.ResponseParts[i] = ResponsePart{ToolCall: &next}
	s.ActiveTurn = &at
	if refresh {
		s.Status = chatStatus(s, 0)
	}
	return s
}

func toolCallDelta(tc ToolCallState, b *ChatToolCallDeltaAction) (ToolCallState, bool) {
	if tc.Status != ToolCallStatusStreaming {
		return tc, false
	}
	if b.Content != nil {
		joined := *b.Content
		if tc.PartialInput != nil {
			joined = *tc.PartialInput + joined
		}
		tc.PartialInput = &joined
	}
	if b.Meta != nil {
		tc.Meta = b.Meta
	}
	if b.InvocationMessage != nil {
		im := *b.InvocationMessage
		tc.InvocationMessage = &im
	}
	return tc, true
}

func toolCallReady(tc ToolCallState, b *ChatToolCallReadyAction) (ToolCallState, bool) {
	switch tc.Status {
	case ToolCallStatusStreaming, ToolCallStatusRunning, ToolCallStatusPendingConfirmation:
	default:
		return tc, false
	}
	next := baseOf(tc, b.Meta)
	next.Contributor = refineContributor(tc.Contributor, b.Contributor)
	if b.Intention != "" {
		next.Intention = b.Intention
	}
	invocation := b.InvocationMessage
	next.InvocationMessage = &invocation
	next.ToolInput = b.ToolInput
	if next.ToolInput == nil && tc.Status != ToolCallStatusStreaming {
		next.ToolInput = tc.ToolInput
	}
	if b.Confirmed != "" {
		next.Status = ToolCallStatusRunning
		next.Confirmed = b.Confirmed
		return next, true
	}
	next.Status = ToolCallStatusPendingConfirmation
	next.ConfirmationTitle, next.RiskAssessment, next.Edits = b.ConfirmationTitle, b.RiskAssessment, b.Edits
	next.Editable, next.Options = b.Editable, b.Options
	if tc.Status == ToolCallStatusPendingConfirmation {
		// A repeated ready restates only what changes (e.g. a risk assessment
		// that resolved); what it omits stays.
		if next.ConfirmationTitle == nil {
			next.ConfirmationTitle = tc.ConfirmationTitle
		}
		if next.RiskAssessment == nil {
			next.RiskAssessment = tc.RiskAssessment
		}
		if next.Edits == nil {
			next.Edits = tc.Edits
		}
		if next.Editable == nil {
			next.Editable = tc.Editable
		}
		if next.Options == nil {
			next.Options = tc.Options
		}
	}
	return next, true
}

// refineContributor merges the contributor named at ready into the one from
// start: a client owner set at start stays unless ready names the same
// client, and a call not owned by a client never becomes one.
func refineContributor(current, next *ToolCallContributor) *ToolCallContributor {
	if next == nil {
		return current
	}
	if current != nil && current.Kind == ContributorClient {
		if next.Kind == ContributorClient && next.ClientID == current.ClientID {
			return next
		}
		return current
	}
	if next.Kind == ContributorClient {
		return current
	}
	return next
}

func toolCallConfirmed(tc ToolCallState, b *ChatToolCallConfirmedAction) (ToolCallState, bool) {
	if tc.Status != ToolCallStatusPendingConfirmation {
		return tc, false
	}
	next := baseOf(tc, b.Meta)
	next.InvocationMessage, next.ToolInput = tc.InvocationMessage, tc.ToolInput
	next.SelectedOption = selectedOption(tc.Options, b.SelectedOptionID)
	if b.Approved {
		// An edit replaces only an inline input; referenced input is replaced
		// by the host in place.
		if b.EditedToolInput != nil && tc.ToolInput != nil && tc.ToolInput.Ref == nil {
			next.ToolInput = &ToolInput{Text: *b.EditedToolInput}
		}
		next.Status = ToolCallStatusRunning
		next.Confirmed = b.Confirmed
		if next.Confirmed == "" {
			next.Confirmed = ConfirmedNotNeeded
		}
		return next, true
	}
	next.Status = ToolCallStatusCancelled
	next.Reason = b.Reason
	if next.Reason == "" {
		next.Reason = CancelDenied
	}
	next.ReasonMessage, next.UserSuggestion = b.ReasonMessage, b.UserSuggestion
	return next, true
}

func selectedOption(options []ConfirmationOption, id string) *ConfirmationOption {
	if id == "" {
		return nil
	}
	i := slices.IndexFunc(options, func(o ConfirmationOption) bool { return o.ID == id })
	if i < 0 {
		return nil
	}
	o := options[i]
	return &o
}

func toolCallComplete(tc ToolCallState, b *ChatToolCallCompleteAction) (ToolCallState, bool) {
	next := baseOf(tc, b.Meta)
	next.InvocationMessage, next.ToolInput = tc.InvocationMessage, tc.ToolInput
	next.Confirmed = ConfirmedNotNeeded
	fromAuth := false
	var earlier []ToolResultContent
	switch tc.Status {
	case ToolCallStatusRunning:
		next.Confirmed, next.SelectedOption = tc.Confirmed, tc.SelectedOption
	case ToolCallStatusPendingConfirmation:
	case ToolCallStatusAuthRequired:
		// Only a failed result may end a call paused for authentication: it
		// cancels the call, keeping the content produced before the pause.
		if b.Result.Success {
			return tc, false
		}
		next.Confirmed, next.SelectedOption = tc.Confirmed, tc.SelectedOption
		earlier, fromAuth = tc.Content, true
	default:
		return tc, false
	}
	next.Success, next.PastTenseMessage = b.Result.Success, b.Result.PastTenseMessage
	next.StructuredContent, next.Error = b.Result.StructuredContent, b.Result.Error
	next.Content = slices.Clone(b.Result.Content)
	if b.RequiresResultConfirmation && !fromAuth {
		next.Status = ToolCallStatusPendingResultConfirmation
		return next, true
	}
	if next.Content == nil {
		next.Content = slices.Clone(earlier)
	}
	next.Status = ToolCallStatusCompleted
	return next, true
}

func toolCallResultConfirmed(tc ToolCallState, b *ChatToolCallResultConfirmedAction) (ToolCallState, bool) {
	if tc.Status != ToolCallStatusPendingResultConfirmation {
		return tc, false
	}
	next := baseOf(tc, b.Meta)
	next.InvocationMessage, next.ToolInput = tc.InvocationMessage, tc.ToolInput
	next.SelectedOption = tc.SelectedOption
	if b.Approved {
		next.Status = ToolCallStatusCompleted
		next.Success, next.PastTenseMessage = tc.Success, tc.PastTenseMessage
		next.Content, next.StructuredContent, next.Error = tc.Content, tc.StructuredContent, tc.Error
		next.Confirmed = tc.Confirmed
		return next, true
	}
	next.Status = ToolCallStatusCancelled
	next.Reason = CancelResultDenied
	return next, true
}

// baseOf returns a tool call with only tc's common fields, its _meta replaced
// by meta when meta is set.
func baseOf(tc ToolCallState, meta map[string]any) ToolCallState {
	next := ToolCallState{
		ToolCallID: tc.ToolCallID, ToolName: tc.ToolName, DisplayName: tc.DisplayName,
		Intention: tc.Intention, Contributor: tc.Contributor, Meta: tc.Meta,
	}
	if meta != nil {
		next.Meta = meta
	}
	return next
}

// chatStatus returns s's status with its activity recomputed: terminal when
// set, else InputNeeded while an input request or tool call waits on the
// user, InProgress while a turn runs, Idle otherwise.
func chatStatus(s ChatState, terminal SessionStatus) SessionStatus {
	activity := terminal
	switch {
	case activity != 0:
	case waitsOnUser(s.ActiveTurn):
		activity = StatusInputNeeded
	case s.ActiveTurn != nil:
		activity = StatusInProgress
	default:
		activity = StatusIdle
	}
	return s.Status.WithActivity(activity)
}

func waitsOnUser(at *ActiveTurn) bool {
	if at == nil {
		return false
	}
	for _, p := range at.ResponseParts {
		if p.InputRequest != nil && p.InputRequest.Response == "" {
			return true
		}
		if p.ToolCall != nil && p.ToolCall.blocking() {
			return true
		}
	}
	return false
}

func activeTurnIs(s ChatState, turnID string) bool {
	return s.ActiveTurn != nil && s.ActiveTurn.ID == turnID
}

func withFlag(s, flag SessionStatus, set bool) SessionStatus {
	if set {
		return s | flag
	}
	return s &^ flag
}

// withoutQueued returns queued without the message id, or nil when none is
// left; it returns queued itself when id is not there.
func withoutQueued(queued []PendingMessage, id string) []PendingMessage {
	if !slices.ContainsFunc(queued, func(m PendingMessage) bool { return m.ID == id }) {
		return queued
	}
	next := slices.DeleteFunc(slices.Clone(queued), func(m PendingMessage) bool { return m.ID == id })
	if len(next) == 0 {
		return nil
	}
	return next
}

// reorder puts the queued messages named in order first, in that order, and
// the others after them in their old order.
func reorder(queued []PendingMessage, order []string) []PendingMessage {
	byID := make(map[string]PendingMessage, len(queued))
	for _, m := range queued {
		byID[m.ID] = m
	}
	next := make([]PendingMessage, 0, len(queued))
	seen := make(map[string]bool, len(queued))
	for _, id := range order {
		if m, ok := byID[id]; ok && !seen[id] {
			seen[id] = true
			next = append(next, m)
		}
	}
	for _, m := range queued {
		if !seen[m.ID] {
			next = append(next, m)
		}
	}
	return next
}

// appendTo appends v to a copy of list, so the result never shares its
// backing array with list.
func appendTo[S ~[]E, E any](list S, v E) S {
	next := make(S, len(list), len(list)+1)
	copy(next, list)
	return append(next, v)
}

// addMillis returns the ISO timestamp ms milliseconds after ts.
func addMillis(ts string, ms int64) (string, bool) {
	t, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		return "", false
	}
	return FormatTime(t.Add(time.Duration(ms) * time.Millisecond)), true
}
