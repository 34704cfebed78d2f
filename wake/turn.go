package wake

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/lease"
	"github.com/agenthost/bots/record"
	"github.com/agenthost/bots/telemetry"
)

// Turn is one main turn the wake answers: it stays open while the back
// session works, shows the back session as a subagent tool call, takes
// post_message's text and the back session's questions and approvals, and
// ends when the back turn the last message it sent becomes ends.
type Turn struct {
	w      *Waker
	m      Message
	main   Main
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
	sent   chan struct{} // closed once the first message was sent
	callID string        // the subagent call in the main turn

	mu        sync.Mutex
	fs        *followed
	session   string
	pending   []string          // ids sent and not yet become turns
	last      string            // the id whose back turn ends the main turn
	backTurns map[string]string // back turn id → the pending id it consumed
	ends      map[string]backEnd
	posted    map[string]bool   // back turn id → it called post_message
	relays    map[string]*relay // relayed request id → relay
	ended     bool
	leaseKey  string // the lease the turn holds, "" for none
}

// backEnd is how a back turn ended.
type backEnd struct {
	turn  string
	state ahp.TurnState
	text  string
	err   string
}

// relay is a question or approval of the back session shown to the person.
type relay struct {
	tool     bool   // an approval (else a question)
	backTurn string // the back turn it belongs to
	answered bool   // the person answered it in the main chat
	running  bool   // an approval confirmed, waiting for its result
}

// Wake answers m's main turn: it finds or starts the back session m's name
// is on and sends it m as a queued message, then follows the back session
// until the main turn ends. It returns at once; the work runs in a
// goroutine of its own, emitting into main.
func (w *Waker) Wake(m Message, main Main) *Turn {
	ctx, cancel := context.WithCancel(w.base)
	t := &Turn{
		w: w, m: m, main: scrubbing(main, w.scrub), ctx: ctx, cancel: cancel, done: make(chan struct{}), sent: make(chan struct{}), callID: "subagent-" + newID(),
		backTurns: map[string]string{}, ends: map[string]backEnd{}, posted: map[string]bool{}, relays: map[string]*relay{},
	}
	// A Waker closing ends the turns it answers, without a word in their
	// chats; a closed one ends the turn before it begins.
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		t.ended = true
		cancel()
		close(t.done)
		return t
	}
	w.turns[t] = struct{}{} // before run can end the turn
	w.goLocked(t.run)
	return t
}

// Done is closed when the main turn has ended: answered, failed or stopped.
func (t *Turn) Done() <-chan struct{} { return t.done }

// Session is the back session's URI once known, else "".
func (t *Turn) Session() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.session
}

func (t *Turn) run() {
	b := t.m.Bot
	t.mu.Lock()
	t.main.Chat(ahp.ToolCallStart(t.m.TurnID, t.callID, SubagentTool, botName(b)))
	t.main.Chat(ahp.ToolCallReady(t.m.TurnID, t.callID, ahp.Plain(botName(b)+" is working"), ahp.ConfirmedNotNeeded))
	t.mu.Unlock()
	name, err := record.FillSessionName(b.Session, t.m.TurnID)
	if err != nil {
		t.fail(failf("The message cannot wake a back session: %v.", err))
		return
	}
	if t.m.Route != "" {
		name = RoutedName(name, t.m.Route)
	}
	tctx, op := t.w.hub.Begin(traced(t.ctx, t.m.parent), telemetry.Cell{}, instr, "wake")
	defer func() { op.End(nil) }()
	ctx, takeover := tctx, false
	if t.w.leases != nil {
		key := leaseKey(b.ID, t.m.Person, name)
		f, over, err := t.w.hold(t.ctx, key, t.progress)
		if err != nil {
			t.fail(err)
			return
		}
		t.mu.Lock()
		ended := t.ended
		if !ended {
			t.leaseKey = key
		}
		t.mu.Unlock()
		if ended {
			t.w.found(key, "")
			t.w.unhold(key)
			return
		}
		ctx, takeover = lease.WithFence(tctx, f), over
	}
	uri, err := t.w.session(WithProgress(ctx, t.progress), t.m, name, takeover)
	if t.w.leases != nil {
		t.w.found(leaseKey(b.ID, t.m.Person, name), uri)
	}
	if err != nil {
		t.fail(err)
		return
	}
	fs, err := t.w.follow(uri)
	if err != nil {
		t.fail(err)
		return
	}
	id := newID()
	t.mu.Lock()
	if t.ended {
		t.mu.Unlock()
		return
	}
	t.session, t.fs = uri, fs
	t.main.Chat(ahp.ToolCallContentChanged(t.m.TurnID, t.callID, []ahp.ToolResultContent{t.subagent()}))
	t.last = id
	t.pending = append(t.pending, id)
	fs.register(id, t)
	t.mu.Unlock()
	if err := t.w.send(ctx, uri, t.w.pending(t.m, id)); err != nil {
		t.mu.Lock()
		t.forgetLocked(id)
		t.mu.Unlock()
		t.fail(err)
		return
	}
	close(t.sent)
	t.mu.Lock()
	stopped := t.ended
	t.mu.Unlock()
	if stopped {
		t.withdraw(uri, id)
	}
}

// progress shows what the back session's start is doing as the content
// of the subagent call, until the back session is known.
func (t *Turn) progress(text string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ended || t.session != "" || text == "" {
		return
	}
	t.main.Chat(ahp.ToolCallContentChanged(t.m.TurnID, t.callID, []ahp.ToolResultContent{ahp.TextContent(text)}))
}

// restarting shows what a start of the agent in the back turn is doing
// (the back chat's activity: after a restart of the server, or of the
// agent's process) above the back session's link, as a first start shows
// its steps; "" shows the link alone again.
func (t *Turn) restarting(text string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ended || t.session == "" {
		return
	}
	content := []ahp.ToolResultContent{t.subagent()}
	if text != "" {
		content = append([]ahp.ToolResultContent{ahp.TextContent(text)}, content...)
	}
	t.main.Chat(ahp.ToolCallContentChanged(t.m.TurnID, t.callID, content))
}

// notified shows a notice of the back turn's harness in the main turn.
func (t *Turn) notified(part ahp.ResponsePart) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.ended {
		t.main.Chat(ahp.AppendPart(t.m.TurnID, part))
	}
}

// subagent is the content of the subagent call: it opens the back chat.
func (t *Turn) subagent() ahp.ToolResultContent {
	return ahp.ToolResultContent{
		Type: ahp.ContentSubagent, Resource: ahp.DefaultChatURI(t.session), Title: botName(t.m.Bot),
		AgentName: t.m.Bot.ID, Description: "The back session of " + botName(t.m.Bot),
	}
}

// fail ends the main turn with chat/error; a turn stopped or a Waker
// closed meanwhile ends nothing.
func (t *Turn) fail(err error) {
	var f *failure
	if !errors.As(err, &f) {
		if t.ctx.Err() != nil {
			t.mu.Lock()
			t.endLocked()
			t.mu.Unlock()
			return
		}
		f = failf("The message could not be handed to the back session: %v", err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ended {
		return
	}
	t.main.Chat(ahp.TurnFailed(t.m.TurnID, t.w.now().Sub(t.m.StartedAt), ahp.ErrorInfo{ErrorType: ErrorSendFailed, Message: f.msg}, false))
	t.endLocked()
}

// endLocked marks the main turn ended and lets go of what it held.
func (t *Turn) endLocked() {
	if t.ended {
		return
	}
	t.ended = true
	if t.fs != nil {
		t.fs.forget(t)
	}
	if t.leaseKey != "" {
		t.w.unhold(t.leaseKey)
		t.leaseKey = ""
	}
	t.cancel()
	close(t.done)
	t.w.mu.Lock()
	delete(t.w.turns, t)
	t.w.mu.Unlock()
}

// forgetLocked drops a pending id that was never sent.
func (t *Turn) forgetLocked(id string) {
	t.pending = slices.DeleteFunc(t.pending, func(p string) bool { return p == id })
	if t.fs != nil {
		t.fs.unregister(id)
	}
}

func (t *Turn) withdraw(session, id string) {
	err := t.w.host.Dispatch(t.w.base, session, ahp.PendingMessageRemoved(ahp.PendingQueued, id))
	if err != nil && !errors.Is(err, ErrRefused) {
		t.w.log.Warn("wake: a waiting message could not be taken back", "session", session, "id", id, "err", err)
	}
}

// Stop is called when the person stopped the main turn (its chat already
// holds the stop): the messages still waiting in the back session are
// taken back and the back turn answering it is stopped.
func (t *Turn) Stop() {
	t.mu.Lock()
	if t.ended {
		t.mu.Unlock()
		return
	}
	session, pending := t.session, slices.Clone(t.pending)
	var running string
	if t.fs != nil {
		if at := t.fs.activeTurn(); at != "" {
			if _, mine := t.backTurns[at]; mine {
				running = at
			}
		}
	}
	if t.fs != nil {
		t.fs.cancelOnStart(pending)
	}
	t.endLocked()
	t.mu.Unlock()
	if session == "" {
		return
	}
	for _, id := range pending {
		t.withdraw(session, id)
	}
	if running != "" {
		err := t.w.host.Dispatch(t.w.base, session, ahp.TurnCancelled(running, 0))
		if err != nil && !errors.Is(err, ErrRefused) {
			t.w.log.Warn("wake: a back turn could not be stopped", "session", session, "turn", running, "err", err)
		}
	}
}

// Steer hands text the person said while the main turn waits to the back
// session, as a queued message the main turn then waits on instead. An
// error means it was not handed on: the caller drops it, reporting the
// reason, and the main turn goes on waiting on what it waited on.
func (t *Turn) Steer(ctx context.Context, text string) error {
	select {
	case <-t.sent:
	case <-t.done:
		return errors.New("the main turn has ended")
	case <-ctx.Done():
		return ctx.Err()
	}
	t.mu.Lock()
	if t.ended {
		t.mu.Unlock()
		return errors.New("the main turn has ended")
	}
	id := newID()
	prev := t.last
	t.last = id
	t.pending = append(t.pending, id)
	t.fs.register(id, t)
	session := t.session
	m := t.m
	m.Text = text
	t.mu.Unlock()
	err := t.w.send(ctx, session, t.w.pending(m, id))
	t.mu.Lock()
	if err != nil {
		t.forgetLocked(id)
		if t.last == id {
			t.last = prev
			if end, ok := t.ends[prev]; ok && !t.ended {
				t.finishLocked(end)
			}
		}
		t.mu.Unlock()
		return err
	}
	stopped := t.ended
	t.mu.Unlock()
	if stopped {
		t.withdraw(session, id)
	}
	return nil
}

// Answer hands the person's answer in the main chat (chat/inputCompleted,
// chat/inputAnswerChanged, chat/toolCallConfirmed on a relayed request) to
// the back session. The main chat has already applied it.
func (t *Turn) Answer(ctx context.Context, a ahp.Action) error {
	t.mu.Lock()
	var back ahp.Action
	switch b := a.Body.(type) {
	case *ahp.ChatToolCallConfirmedAction:
		r := t.relays[b.ToolCallID]
		if r == nil || !r.tool {
			t.mu.Unlock()
			return errors.New("no approval of the back session is waiting under that id")
		}
		r.answered = true
		r.running = b.Approved
		if !b.Approved {
			delete(t.relays, b.ToolCallID)
		}
		c := *b
		c.TurnID = r.backTurn
		back = ahp.NewAction(&c)
	case *ahp.ChatInputCompletedAction:
		r := t.relays[b.RequestID]
		if r == nil || r.tool {
			t.mu.Unlock()
			return errors.New("no question of the back session is waiting under that id")
		}
		r.answered = true
		back = a
	case *ahp.ChatInputAnswerChangedAction:
		if r := t.relays[b.RequestID]; r == nil || r.tool {
			t.mu.Unlock()
			return errors.New("no question of the back session is waiting under that id")
		}
		back = a
	default:
		t.mu.Unlock()
		return errors.New("not an answer")
	}
	session := t.session
	t.mu.Unlock()
	return t.w.host.Dispatch(ctx, session, back)
}

// finishLocked ends the main turn as its last back turn ended.
func (t *Turn) finishLocked(end backEnd) {
	if t.ended {
		return
	}
	d := t.w.now().Sub(t.m.StartedAt)
	id := t.m.TurnID
	switch end.state {
	case ahp.TurnStateComplete:
		if !t.posted[end.turn] {
			if text := t.absentText(end.text); text != "" {
				t.main.Chat(ahp.AppendPart(id, ahp.MarkdownResponse(newID(), text)))
			}
		}
		t.main.Chat(ahp.ToolCallComplete(id, t.callID, ahp.ToolCallResult{
			Success: true, PastTenseMessage: ahp.Plain(botName(t.m.Bot) + " finished"), Content: []ahp.ToolResultContent{t.subagent()},
		}))
		t.main.Chat(ahp.TurnComplete(id, d))
	case ahp.TurnStateError:
		msg := end.err
		if msg == "" {
			msg = "The back session's turn failed."
		}
		t.main.Chat(ahp.TurnFailed(id, d, ahp.ErrorInfo{ErrorType: ErrorSendFailed, Message: msg}, false))
	default:
		t.main.Chat(ahp.TurnCancelled(id, d))
	}
	t.endLocked()
}

// absentText is what the main turn gets when the back turn ended without
// post_message: mainTurnPostMessageAbsent.
func (t *Turn) absentText(final string) string {
	notice := botName(t.m.Bot) + " finished without a reply"
	switch t.w.absent {
	case PostMessageAbsentNotice:
		return notice
	case PostMessageAbsentSilence:
		return ""
	case PostMessageAbsentPostNotice:
		if final == "" {
			return notice
		}
	}
	return final
}

// back handles an action of the back chat that concerns this main turn:
// backTurn is the back turn it belongs to (the one it starts, else the one
// that was active before it), and next is the back chat's state after it.
func (t *Turn) back(fs *followed, a ahp.Action, backTurn string, next ahp.ChatState) {
	switch b := a.Body.(type) {
	case *ahp.ChatTurnStartedAction:
		t.mu.Lock()
		t.pending = slices.DeleteFunc(t.pending, func(p string) bool { return p == b.QueuedMessageID })
		t.backTurns[b.TurnID] = b.QueuedMessageID
		t.mu.Unlock()
	case *ahp.ChatPendingMessageRemovedAction:
		t.mu.Lock()
		defer t.mu.Unlock()
		t.pending = slices.DeleteFunc(t.pending, func(p string) bool { return p == b.ID })
		if b.ID == t.last && !t.ended {
			t.finishLocked(backEnd{state: ahp.TurnStateCancelled})
		}
	case *ahp.ChatToolCallReadyAction:
		tc := next.ActiveTurn.ToolCall(b.TurnID, b.ToolCallID)
		if tc == nil {
			return
		}
		switch {
		case tc.Status == ahp.ToolCallStatusRunning && ours(tc):
			t.post(fs, b.TurnID, tc)
		case tc.Status == ahp.ToolCallStatusPendingConfirmation:
			t.relayApproval(fs, b.TurnID, *tc)
		}
	case *ahp.ChatToolCallConfirmedAction:
		t.backConfirmed(b)
	case *ahp.ChatToolCallCompleteAction:
		t.backCompleted(b)
	case *ahp.ChatInputRequestedAction:
		t.relayInput(fs, backTurn, b.Request)
	case *ahp.ChatInputCompletedAction:
		t.backInputCompleted(b)
	case *ahp.ChatActivityChangedAction:
		t.restarting(b.Activity)
	case *ahp.ChatResponsePartAction:
		if b.Part.SystemNotification != nil {
			t.notified(b.Part)
		}
	case *ahp.ChatTurnCompleteAction:
		t.backEnded(b.TurnID, next)
	case *ahp.ChatTurnCancelledAction:
		t.backEnded(b.TurnID, next)
	case *ahp.ChatErrorAction:
		t.backEnded(b.TurnID, next)
	}
}

// ours reports whether tc is a call of the tool the wake provides.
func ours(tc *ahp.ToolCallState) bool {
	return tc.ToolName == PostMessage && tc.Contributor != nil && tc.Contributor.Kind == ahp.ContributorClient && tc.Contributor.ClientID == ClientID
}

// postText is the text of a post_message call's input.
func postText(tc *ahp.ToolCallState) (string, bool) {
	if tc.ToolInput == nil {
		return "", false
	}
	var in struct {
		Text *string `json:"text"`
	}
	if json.Unmarshal([]byte(tc.ToolInput.Text), &in) != nil || in.Text == nil {
		return "", false
	}
	return *in.Text, true
}

// post adds a post_message call's text to the main turn and answers the
// call.
func (t *Turn) post(fs *followed, backTurn string, tc *ahp.ToolCallState) {
	text, ok := postText(tc)
	res := ahp.ToolCallResult{Success: true, PastTenseMessage: ahp.Plain("Posted to the main chat")}
	switch {
	case !ok:
		res = ahp.ToolCallResult{PastTenseMessage: ahp.Plain("Nothing was posted"), Error: &ahp.ToolError{Message: `post_message takes {"text": "<what the person reads>"}`}}
	default:
		t.mu.Lock()
		if t.ended || t.backTurns[backTurn] == "" {
			res = ahp.ToolCallResult{PastTenseMessage: ahp.Plain("Nothing was posted"), Error: &ahp.ToolError{Message: "nobody waits in the main chat for this turn any more"}}
		} else {
			t.posted[backTurn] = true
			t.main.Chat(ahp.AppendPart(t.m.TurnID, ahp.MarkdownResponse(newID(), text)))
		}
		t.mu.Unlock()
	}
	fs.complete(backTurn, tc.ToolCallID, res)
}

func (t *Turn) relayApproval(fs *followed, backTurn string, tc ahp.ToolCallState) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ended || t.relays[tc.ToolCallID] != nil {
		return
	}
	t.relays[tc.ToolCallID] = &relay{tool: true, backTurn: backTurn}
	if t.w.askIn == AskInOwn {
		t.main.Session(ahp.InputNeededSet(ahp.SessionInputRequest{
			Kind: ahp.InputNeededToolConfirmation, ID: tc.ToolCallID, Chat: fs.chat, TurnID: backTurn, ToolCall: &tc,
		}))
		return
	}
	t.main.Chat(ahp.NewAction(&ahp.ChatToolCallStartAction{
		TurnID: t.m.TurnID, ToolCallID: tc.ToolCallID, ToolName: tc.ToolName, DisplayName: tc.DisplayName, Intention: tc.Intention,
	}))
	ready := &ahp.ChatToolCallReadyAction{
		TurnID: t.m.TurnID, ToolCallID: tc.ToolCallID, ToolInput: tc.ToolInput, ConfirmationTitle: tc.ConfirmationTitle,
		RiskAssessment: tc.RiskAssessment, Edits: tc.Edits, Editable: tc.Editable, Options: tc.Options,
	}
	if tc.InvocationMessage != nil {
		ready.InvocationMessage = *tc.InvocationMessage
	}
	t.main.Chat(ahp.NewAction(ready))
}

// backConfirmed follows an approval answered in the back chat.
func (t *Turn) backConfirmed(b *ahp.ChatToolCallConfirmedAction) {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := t.relays[b.ToolCallID]
	if r == nil {
		return
	}
	if t.w.askIn == AskInOwn {
		delete(t.relays, b.ToolCallID)
		t.main.Session(ahp.InputNeededRemoved(b.ToolCallID))
		return
	}
	if !r.answered { // answered in the back chat itself: the main chat follows
		c := *b
		c.TurnID = t.m.TurnID
		t.main.Chat(ahp.NewAction(&c))
		r.answered, r.running = true, b.Approved
	}
	if !b.Approved {
		delete(t.relays, b.ToolCallID)
	}
}

// backCompleted follows the end of an approved (or withdrawn) call.
func (t *Turn) backCompleted(b *ahp.ChatToolCallCompleteAction) {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := t.relays[b.ToolCallID]
	if r == nil {
		return
	}
	delete(t.relays, b.ToolCallID)
	if t.w.askIn == AskInOwn {
		t.main.Session(ahp.InputNeededRemoved(b.ToolCallID))
		return
	}
	t.endRelayLocked(b.ToolCallID, r, &b.Result)
}

// endRelayLocked ends a relayed request in the main chat: a withdrawn one
// leaves it, a running call completes with result.
func (t *Turn) endRelayLocked(id string, r *relay, result *ahp.ToolCallResult) {
	switch {
	case !r.tool:
		if !r.answered {
			t.main.Chat(ahp.InputCompleted(id, ahp.InputCancel, nil))
		}
	case r.running && result != nil:
		t.main.Chat(ahp.ToolCallComplete(t.m.TurnID, id, *result))
	case r.running:
		t.main.Chat(ahp.ToolCallComplete(t.m.TurnID, id, ahp.ToolCallResult{PastTenseMessage: ahp.Plain("Stopped"), Error: &ahp.ToolError{Message: "the back turn ended first"}}))
	default:
		reason := ahp.Plain("The back session withdrew the request.")
		t.main.Chat(ahp.NewAction(&ahp.ChatToolCallConfirmedAction{TurnID: t.m.TurnID, ToolCallID: id, Reason: ahp.CancelSkipped, ReasonMessage: &reason}))
	}
}

func (t *Turn) relayInput(fs *followed, backTurn string, req ahp.ChatInputRequest) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.ended {
		return
	}
	_, again := t.relays[req.ID]
	if !again {
		t.relays[req.ID] = &relay{backTurn: backTurn}
	}
	if t.w.askIn == AskInOwn {
		t.main.Session(ahp.InputNeededSet(ahp.SessionInputRequest{Kind: ahp.InputNeededChatInput, ID: req.ID, Chat: fs.chat, Request: &req}))
		return
	}
	t.main.Chat(ahp.InputRequested(req))
}

func (t *Turn) backInputCompleted(b *ahp.ChatInputCompletedAction) {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := t.relays[b.RequestID]
	if r == nil {
		return
	}
	delete(t.relays, b.RequestID)
	if t.w.askIn == AskInOwn {
		t.main.Session(ahp.InputNeededRemoved(b.RequestID))
		return
	}
	if !r.answered { // answered or withdrawn in the back chat: the main chat follows
		t.main.Chat(ahp.InputCompleted(b.RequestID, b.Response, b.Answers))
	}
}

// backEnded follows the end of one of this main turn's back turns.
func (t *Turn) backEnded(backTurn string, next ahp.ChatState) {
	t.mu.Lock()
	defer t.mu.Unlock()
	pid, ok := t.backTurns[backTurn]
	if !ok {
		return
	}
	for id, r := range t.relays {
		if r.backTurn != backTurn {
			continue
		}
		delete(t.relays, id)
		if t.w.askIn == AskInOwn {
			t.main.Session(ahp.InputNeededRemoved(id))
		} else if !t.ended {
			t.endRelayLocked(id, r, nil)
		}
	}
	end := backEnd{turn: backTurn, state: ahp.TurnStateComplete}
	for i := len(next.Turns) - 1; i >= 0; i-- {
		if tn := next.Turns[i]; tn.ID == backTurn {
			end.state = tn.State
			var text []string
			for _, p := range tn.ResponseParts {
				switch {
				case p.Markdown != nil:
					text = append(text, p.Markdown.Content)
				case p.Error != nil:
					end.err = p.Error.Error.Message
				}
			}
			end.text = strings.Join(text, "\n\n")
			break
		}
	}
	t.ends[pid] = end
	if pid == t.last {
		t.finishLocked(end)
	}
}

// followed is a back session the Waker follows: its chat's state, and which
// main turn each message sent to it, and each turn they became, answers.
type followed struct {
	w    *Waker
	uri  string
	chat string

	mu        sync.Mutex
	state     ahp.ChatState
	byPending map[string]*Turn
	byTurn    map[string]*Turn
	stopped   map[string]bool // pending ids of stopped main turns: the turn one becomes is stopped
	gone      bool
}

// cancelOnStart marks pending ids whose main turn was stopped: a turn one
// of them has already become, unseen yet, is stopped when it is seen.
func (fs *followed) cancelOnStart(ids []string) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for _, id := range ids {
		fs.stopped[id] = true
	}
}

// follow returns the followed session at uri, following it from now on
// when it was not followed yet.
func (w *Waker) follow(uri string) (*followed, error) {
	unlock := w.keys.lock("follow\x00" + uri)
	defer unlock()
	w.mu.Lock()
	fs := w.sessions[uri]
	closed := w.closed
	w.mu.Unlock()
	if closed {
		return nil, context.Canceled
	}
	if fs != nil {
		return fs, nil
	}
	state, ch, err := w.host.Follow(w.base, uri)
	if err != nil {
		if errors.Is(err, ErrNoSession) {
			return nil, failf("The host no longer holds the back session %s.", uri)
		}
		return nil, failf("The back session %s cannot be followed: %v", uri, err)
	}
	fs = &followed{w: w, uri: uri, chat: ahp.DefaultChatURI(uri), state: state, byPending: map[string]*Turn{}, byTurn: map[string]*Turn{}, stopped: map[string]bool{}}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.goLocked(func() { fs.loop(ch) }) {
		return nil, context.Canceled // ch ends with the Waker's context
	}
	w.sessions[uri] = fs
	return fs, nil
}

func (fs *followed) loop(ch <-chan ahp.Action) {
	for a := range ch {
		fs.handle(a)
	}
	fs.mu.Lock()
	fs.gone = true
	turns := map[*Turn]bool{}
	for _, t := range fs.byPending {
		turns[t] = true
	}
	for _, t := range fs.byTurn {
		turns[t] = true
	}
	fs.byPending, fs.byTurn = map[string]*Turn{}, map[string]*Turn{}
	fs.mu.Unlock()
	fs.w.mu.Lock()
	if fs.w.sessions[fs.uri] == fs {
		delete(fs.w.sessions, fs.uri)
	}
	fs.w.mu.Unlock()
	if fs.w.base.Err() != nil {
		return
	}
	for t := range turns {
		t.fail(failf("The host no longer holds the back session %s.", fs.uri))
	}
}

func (fs *followed) register(id string, t *Turn) {
	fs.mu.Lock()
	fs.byPending[id] = t
	fs.mu.Unlock()
}

func (fs *followed) unregister(id string) {
	fs.mu.Lock()
	delete(fs.byPending, id)
	fs.mu.Unlock()
}

// forget drops every registration of t.
func (fs *followed) forget(t *Turn) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for id, x := range fs.byPending {
		if x == t {
			delete(fs.byPending, id)
		}
	}
	for id, x := range fs.byTurn {
		if x == t {
			delete(fs.byTurn, id)
		}
	}
}

// activeTurn is the id of the back chat's running turn, or "".
func (fs *followed) activeTurn() string {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.state.ActiveTurn == nil {
		return ""
	}
	return fs.state.ActiveTurn.ID
}

// handle follows one action of the back chat, in order.
func (fs *followed) handle(a ahp.Action) {
	fs.mu.Lock()
	prev := fs.state
	fs.state = ahp.ApplyChat(fs.state, a)
	next := fs.state
	if len(fs.state.Turns) > 0 {
		// The mirror needs the active turn alone; an ended one is read
		// from next, once.
		fs.state.Turns = nil
	}
	var t *Turn
	backTurn, stop := "", ""
	switch b := a.Body.(type) {
	case *ahp.ChatTurnStartedAction:
		backTurn = b.TurnID
		if t = fs.byPending[b.QueuedMessageID]; t != nil {
			delete(fs.byPending, b.QueuedMessageID)
			fs.byTurn[b.TurnID] = t
		}
		if fs.stopped[b.QueuedMessageID] {
			delete(fs.stopped, b.QueuedMessageID)
			stop = b.TurnID
		}
	case *ahp.ChatPendingMessageRemovedAction:
		delete(fs.stopped, b.ID)
		if b.Kind == ahp.PendingQueued {
			if t = fs.byPending[b.ID]; t != nil {
				delete(fs.byPending, b.ID)
			}
		}
	default:
		if prev.ActiveTurn != nil {
			backTurn = prev.ActiveTurn.ID
			t = fs.byTurn[backTurn]
			if next.ActiveTurn == nil {
				delete(fs.byTurn, backTurn)
			}
		}
	}
	fs.mu.Unlock()
	if stop != "" {
		fs.stop(stop)
	}
	if t != nil {
		t.back(fs, a, backTurn, next)
		return
	}
	// A turn no main turn waits on (one begun in the back chat itself):
	// its post_message has nobody to post to.
	if b, ok := a.Body.(*ahp.ChatToolCallReadyAction); ok {
		if tc := next.ActiveTurn.ToolCall(b.TurnID, b.ToolCallID); tc != nil && tc.Status == ahp.ToolCallStatusRunning && ours(tc) {
			fs.complete(b.TurnID, b.ToolCallID, ahp.ToolCallResult{
				PastTenseMessage: ahp.Plain("Nothing was posted"),
				Error:            &ahp.ToolError{Message: "no main chat waits on this turn; post_message answers only a turn a message woke"},
			})
		}
	}
}

// stop stops a back turn whose main turn was stopped.
func (fs *followed) stop(turnID string) {
	err := fs.w.host.Dispatch(fs.w.base, fs.uri, ahp.TurnCancelled(turnID, 0))
	if err != nil && !errors.Is(err, ErrRefused) && fs.w.base.Err() == nil {
		fs.w.log.Warn("wake: a back turn could not be stopped", "session", fs.uri, "turn", turnID, "err", err)
	}
}

// complete answers a post_message call.
func (fs *followed) complete(backTurn, callID string, res ahp.ToolCallResult) {
	err := fs.w.host.Dispatch(fs.w.base, fs.uri, ahp.ToolCallComplete(backTurn, callID, res))
	// A refusal: the call ended meanwhile, or another instance runs the
	// session (and answers its calls).
	if err != nil && !errors.Is(err, ErrRefused) && fs.w.base.Err() == nil {
		fs.w.log.Warn("wake: a post_message call could not be answered", "session", fs.uri, "call", callID, "err", err)
	}
}
