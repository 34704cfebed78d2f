package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/wake"
)

// What a turn of a Host session hands its agent (Work): replies,
// progress, reasoning, tool reports and calls, questions and approvals.

// runAgent runs one turn, turning a panic of the agent into an error.
func runAgent(ctx context.Context, a wake.Agent, w wake.Work) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the agent panicked: %v", r)
		}
	}()
	return a.Turn(ctx, w)
}

// work is what an agent does one turn through.
type work struct {
	s   *localSession
	t   *localTurn
	msg ahp.Message
}

func (w *work) TurnID() string       { return w.t.id }
func (w *work) Message() ahp.Message { return w.msg }

// liveLocked reports whether the turn still runs. Called with s locked.
func (w *work) liveLocked() bool { return !w.s.Gone() && w.s.turn == w.t && !w.t.stopped }

func (w *work) Reply(text string) {
	w.stream(text, &w.t.reply, func(id string) ahp.ResponsePart { return ahp.MarkdownResponse(id, text) }, ahp.Delta)
}

// stream streams text into the turn's part whose id *part holds: the
// first text opens the part (open), and the rest is appended to it
// (more).
func (w *work) stream(text string, part *string, open func(id string) ahp.ResponsePart, more func(turnID, partID, text string) ahp.Action) {
	if text == "" {
		return
	}
	s := w.s
	s.Lock()
	defer s.Unlock()
	if !w.liveLocked() {
		return
	}
	if *part == "" {
		*part = newID()
		s.emitChatLocked(ahp.AppendPart(w.t.id, open(*part)), nil)
		return
	}
	s.emitChatLocked(more(w.t.id, *part, text), nil)
}

var errTurnOver = errors.New("the turn is over")

// progress shows what a start of the agent during the turn is doing (a
// restored session's first turn, or a turn after the agent's process
// ended) as the chat's activity.
func (w *work) progress(text string) {
	s := w.s
	s.Lock()
	defer s.Unlock()
	if w.liveLocked() {
		s.showActivityLocked(text)
	}
}

// Notify shows a notice of the harness in the turn, as a system
// notification.
func (w *work) Notify(text string) {
	if text == "" {
		return
	}
	s := w.s
	s.Lock()
	defer s.Unlock()
	if w.liveLocked() {
		s.emitChatLocked(ahp.AppendPart(w.t.id, ahp.ResponsePart{SystemNotification: &ahp.SystemNotificationPart{Content: ahp.Plain(text)}}), nil)
	}
}

var (
	_ wake.Reasoner     = (*work)(nil)
	_ wake.ToolReporter = (*work)(nil)
	_ wake.Notifier     = (*work)(nil)
)

// Reason streams text into the turn's reasoning part.
func (w *work) Reason(text string) {
	w.stream(text, &w.t.reason, func(id string) ahp.ResponsePart { return ahp.ReasoningResponse(id, text) }, ahp.Reasoning)
}

// ReportTool shows one of the agent's own tool calls in the turn: started
// and running at its first report, completed or failed when its status
// says so. Reports of a call already ended are dropped.
func (w *work) ReportTool(r wake.ToolReport) {
	if r.ID == "" {
		return
	}
	s := w.s
	s.Lock()
	defer s.Unlock()
	if !w.liveLocked() {
		return
	}
	if w.t.tools == nil {
		w.t.tools = map[string]*reportedTool{}
	}
	rt := w.t.tools[r.ID]
	if rt == nil {
		rt = &reportedTool{id: newID(), title: r.Title}
		if rt.title == "" {
			rt.title = r.ID
		}
		w.t.tools[r.ID] = rt
		name := "agent_tool"
		if r.Kind != "" {
			name = "agent_" + r.Kind
		}
		s.emitChatLocked(ahp.ToolCallStart(w.t.id, rt.id, name, rt.title), nil)
		ready := &ahp.ChatToolCallReadyAction{TurnID: w.t.id, ToolCallID: rt.id, InvocationMessage: ahp.Plain(rt.title), Confirmed: ahp.ConfirmedNotNeeded}
		if r.Input != "" {
			ready.ToolInput = &ahp.ToolInput{Text: r.Input}
		}
		s.emitChatLocked(ahp.NewAction(ready), nil)
	} else if r.Title != "" && r.Title != rt.title && !rt.done {
		rt.title = r.Title
		msg := ahp.Plain(r.Title)
		s.emitChatLocked(ahp.NewAction(&ahp.ChatToolCallDeltaAction{TurnID: w.t.id, ToolCallID: rt.id, InvocationMessage: &msg}), nil)
	}
	if rt.done || (r.Status != wake.ToolCompleted && r.Status != wake.ToolFailed) {
		return
	}
	rt.done = true
	res := ahp.ToolCallResult{Success: r.Status == wake.ToolCompleted, PastTenseMessage: ahp.Plain(rt.title)}
	if r.Output != "" {
		res.Content = []ahp.ToolResultContent{ahp.TextContent(r.Output)}
	}
	if !res.Success {
		res.Error = &ahp.ToolError{Message: rt.title + " failed"}
	}
	s.emitChatLocked(ahp.ToolCallComplete(w.t.id, rt.id, res), nil)
}

func (w *work) CallTool(ctx context.Context, name string, input json.RawMessage) (ahp.ToolCallResult, error) {
	s := w.s
	s.Lock()
	if !w.liveLocked() {
		s.Unlock()
		return ahp.ToolCallResult{}, errTurnOver
	}
	id := newID()
	var client *ahp.SessionActiveClient
	var display string
	if c := s.spec.Client; c != nil {
		for _, d := range c.Tools {
			if d.Name == name {
				client, display = c, d.Title
			}
		}
	}
	if display == "" {
		display = name
	}
	start := &ahp.ChatToolCallStartAction{TurnID: w.t.id, ToolCallID: id, ToolName: name, DisplayName: display}
	if client != nil {
		start.Contributor = &ahp.ToolCallContributor{Kind: ahp.ContributorClient, ClientID: client.ClientID}
	}
	s.emitChatLocked(ahp.NewAction(start), nil)
	invocation := ahp.Plain("Calling " + display)
	toolInput := &ahp.ToolInput{Text: string(input)}
	if slices.Contains(s.spec.Deny, name) {
		s.emitChatLocked(ahp.NewAction(&ahp.ChatToolCallReadyAction{TurnID: w.t.id, ToolCallID: id, InvocationMessage: invocation, ToolInput: toolInput}), nil)
		reason := ahp.Plain("The session's deny list refuses " + name + ".")
		s.emitChatLocked(ahp.NewAction(&ahp.ChatToolCallConfirmedAction{TurnID: w.t.id, ToolCallID: id, Reason: ahp.CancelDenied, ReasonMessage: &reason}), nil)
		s.Unlock()
		return ahp.ToolCallResult{}, wake.ErrDenied
	}
	s.emitChatLocked(ahp.NewAction(&ahp.ChatToolCallReadyAction{TurnID: w.t.id, ToolCallID: id, InvocationMessage: invocation, ToolInput: toolInput, Confirmed: ahp.ConfirmedNotNeeded}), nil)
	if client == nil {
		res := ahp.ToolCallResult{Success: false, PastTenseMessage: ahp.Plain("No tool " + name), Error: &ahp.ToolError{Message: "no tool named " + name}}
		s.emitChatLocked(ahp.ToolCallComplete(w.t.id, id, res), nil)
		s.Unlock()
		return res, nil
	}
	ch := make(chan ahp.Action, 1)
	s.waits[id] = ch
	s.Unlock()
	select {
	case a := <-ch:
		return a.Body.(*ahp.ChatToolCallCompleteAction).Result, nil
	case <-ctx.Done():
		s.Lock()
		defer s.Unlock()
		if _, waiting := s.waits[id]; waiting {
			delete(s.waits, id)
			if w.liveLocked() { // abandoned: the call ends now, as a withdrawn question does
				s.emitChatLocked(ahp.ToolCallComplete(w.t.id, id, ahp.ToolCallResult{
					Success: false, PastTenseMessage: ahp.Plain("Abandoned " + display), Error: &ahp.ToolError{Message: "the call was abandoned"},
				}), nil)
			}
		}
		return ahp.ToolCallResult{}, ctx.Err()
	}
}

func (w *work) Ask(ctx context.Context, questions []ahp.ChatInputQuestion) (ahp.InputResponse, map[string]ahp.ChatInputAnswer, error) {
	s := w.s
	s.Lock()
	if !w.liveLocked() {
		s.Unlock()
		return "", nil, errTurnOver
	}
	id := newID()
	s.emitChatLocked(ahp.InputRequested(ahp.ChatInputRequest{ID: id, Questions: questions}), nil)
	ch := make(chan ahp.Action, 1)
	s.waits[id] = ch
	s.Unlock()
	select {
	case a := <-ch:
		b := a.Body.(*ahp.ChatInputCompletedAction)
		return b.Response, b.Answers, nil
	case <-ctx.Done():
		s.Lock()
		defer s.Unlock()
		if _, waiting := s.waits[id]; waiting {
			delete(s.waits, id)
			if w.liveLocked() {
				s.emitChatLocked(ahp.InputCompleted(id, ahp.InputCancel, nil), nil) // withdrawn
			}
		}
		return "", nil, ctx.Err()
	}
}

func (w *work) Approve(ctx context.Context, ap wake.Approval) (bool, error) {
	s := w.s
	s.Lock()
	if !w.liveLocked() {
		s.Unlock()
		return false, errTurnOver
	}
	id := newID()
	display := ap.DisplayName
	if display == "" {
		display = ap.ToolName
	}
	s.emitChatLocked(ahp.ToolCallStart(w.t.id, id, ap.ToolName, display), nil)
	title := ahp.Plain("Allow " + display + "?")
	s.emitChatLocked(ahp.NewAction(&ahp.ChatToolCallReadyAction{
		TurnID: w.t.id, ToolCallID: id, InvocationMessage: ahp.Plain(ap.Invocation),
		ToolInput: &ahp.ToolInput{Text: ap.Input}, ConfirmationTitle: &title,
	}), nil)
	ch := make(chan ahp.Action, 1)
	s.waits[id] = ch
	s.Unlock()
	select {
	case a := <-ch:
		b := a.Body.(*ahp.ChatToolCallConfirmedAction)
		if !b.Approved {
			return false, nil
		}
		s.Lock()
		if w.liveLocked() {
			s.emitChatLocked(ahp.ToolCallComplete(w.t.id, id, ahp.ToolCallResult{Success: true, PastTenseMessage: ahp.Plain("Ran " + display)}), nil)
		}
		s.Unlock()
		return true, nil
	case <-ctx.Done():
		s.Lock()
		defer s.Unlock()
		if _, waiting := s.waits[id]; waiting {
			delete(s.waits, id)
			if w.liveLocked() { // withdrawn
				s.emitChatLocked(ahp.ToolCallComplete(w.t.id, id, ahp.ToolCallResult{
					Success: false, PastTenseMessage: ahp.Plain("Withdrawn"), Error: &ahp.ToolError{Message: "the request was withdrawn"},
				}), nil)
			}
		}
		return false, ctx.Err()
	}
}
