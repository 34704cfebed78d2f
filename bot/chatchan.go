package bot

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/engine"
	"github.com/agenthost/bots/errcode"
	"github.com/agenthost/bots/record"
	"github.com/agenthost/bots/route"
	"github.com/agenthost/bots/wake"
)

// channel returns the session or chat channel of a bot chat at uri.
func (c *chats) channel(ctx context.Context, caller engine.Caller, uri string) (engine.Channel, bool, error) {
	ch := c.get(uri)
	if ch == nil {
		return nil, false, nil
	}
	if !ch.mayUse(ctx, c.s.current(caller.Principal)) {
		return nil, true, errcode.New(errcode.PermissionDenied, "Permission denied: %s", uri)
	}
	if uri == ch.session {
		return chatSession{ch}, true, nil
	}
	return chatChannel{ch}, true, nil
}

// chatSession is a bot chat's session channel.
type chatSession struct{ ch *chat }

func (s chatSession) URI() string { return s.ch.session }

func (s chatSession) Subscribe(ctx context.Context, sub *engine.Subscriber) (engine.Snapshot, error) {
	s.ch.mu.Lock()
	defer s.ch.mu.Unlock()
	return engine.Snapshot{State: s.ch.sstate, Seq: s.ch.sseq}, nil
}

// Dispatch takes the session actions a client may send: a title, read and
// archived.
func (s chatSession) Dispatch(ctx context.Context, d engine.Dispatch) error {
	a, err := d.Decode()
	if err != nil {
		return err
	}
	ch := s.ch
	ch.mu.Lock()
	defer ch.mu.Unlock()
	switch a.Body.(type) {
	case *ahp.SessionTitleChangedAction, *ahp.SessionIsReadChangedAction, *ahp.SessionIsArchivedChangedAction:
		origin := d.Origin
		for range maxBehind {
			ch.syncLocked()
			if ch.gone {
				return errcode.New(errcode.NotFound, "no session %s", ch.session)
			}
			if ch.emitSessionLocked(a, &origin, true) {
				return nil
			}
		}
		return errcode.New(errcode.Unavailable, "the session %s is being written by other instances; try again", ch.session)
	}
	return errcode.New(errcode.Invalid, "a bot chat's session does not take %s", a.Type)
}

// chatChannel is a bot chat's chat channel.
type chatChannel struct{ ch *chat }

func (c chatChannel) URI() string { return c.ch.uri }

func (c chatChannel) Subscribe(ctx context.Context, sub *engine.Subscriber) (engine.Snapshot, error) {
	c.ch.mu.Lock()
	defer c.ch.mu.Unlock()
	return engine.Snapshot{State: c.ch.cstate, Seq: c.ch.cseq}, nil
}

func rejectf(format string, args ...any) error { return errcode.New(errcode.Invalid, format, args...) }

// Dispatch takes a person's actions in the chat: a message begins a turn
// that wakes the bot's back session; a resume of a turn the log showed
// interrupted wakes it again with the turn's message; a stop, a steer,
// answers to the back session's questions and approvals, the queue and
// the draft.
func (c chatChannel) Dispatch(ctx context.Context, d engine.Dispatch) error {
	a, err := d.Decode()
	if err != nil {
		return err
	}
	ch := c.ch
	origin := d.Origin
	// With shared logs another instance may write the chat first: the
	// chat then holds what it wrote, and the action is decided again.
	for range maxBehind {
		retry, err := c.dispatch(ctx, a, origin)
		if !retry {
			return err
		}
	}
	return errcode.New(errcode.Unavailable, "the chat %s is being written by other instances; try again", ch.uri)
}

// maxBehind is how many times an action is decided again on a chat other
// instances wrote first.
const maxBehind = 20

// dispatch decides a person's action on the chat as this instance holds
// it; retry means another instance wrote the chat first and nothing was
// done.
func (c chatChannel) dispatch(ctx context.Context, a ahp.Action, origin engine.Origin) (retry bool, err error) {
	ch := c.ch
	ch.mu.Lock()
	ch.syncLocked()
	if ch.gone {
		ch.mu.Unlock()
		return false, errcode.New(errcode.NotFound, "no chat %s", ch.uri)
	}
	at := ch.cstate.ActiveTurn
	var after func()
	switch b := a.Body.(type) {
	case *ahp.ChatTurnStartedAction:
		switch {
		case b.TurnID == "" || b.Message.Origin.Kind != ahp.MessageUser:
			err = rejectf("a turn needs a turnId and the person's message")
		case at != nil:
			err = rejectf("a turn is in progress")
		case b.QueuedMessageID != "":
			err = rejectf("the host starts queued messages itself")
		case slices.ContainsFunc(ch.cstate.Turns, func(t ahp.Turn) bool { return t.ID == b.TurnID }): // among the turns held
			err = rejectf("turn %q exists", b.TurnID)
		default:
			if !ch.emitChatLocked(a, &origin) {
				retry = true
				break
			}
			after = ch.beginLocked(ctx, b)
		}
	case *ahp.ChatTurnResumeAction:
		last, ok := resumable(ch.cstate, b.TurnID)
		if !ok {
			err = rejectf("turn %q is not the latest turn, ended with an error that can be resumed", b.TurnID)
			break
		}
		if !ch.emitChatLocked(a, &origin) {
			retry = true
			break
		}
		after = ch.beginLocked(ctx, &ahp.ChatTurnStartedAction{TurnID: last.ID, StartedAt: ahp.FormatTime(ch.c.s.now()), Message: last.Message})
	case *ahp.ChatTurnCancelledAction:
		if at == nil || at.ID != b.TurnID {
			err = rejectf("turn %q is not in progress", b.TurnID)
			break
		}
		if !ch.emitChatLocked(a, &origin) {
			retry = true
			break
		}
		if t := ch.turn; t != nil {
			ch.turn = nil
			after = func() { t.Stop(); ch.next(context.WithoutCancel(ctx)) }
		}
	case *ahp.ChatPendingMessageSetAction:
		if b.ID == "" || (b.Kind != ahp.PendingQueued && b.Kind != ahp.PendingSteering) || b.Message.Origin.Kind != ahp.MessageUser {
			err = rejectf("a pending message needs an id, the kind queued or steering, and the person's message")
			break
		}
		if !ch.emitChatLocked(a, &origin) {
			retry = true
			break
		}
		switch {
		case b.Kind == ahp.PendingSteering && ch.turn != nil:
			t, id, text := ch.turn, b.ID, b.Message.Text
			after = func() { ch.steer(context.WithoutCancel(ctx), t, id, text) }
		case at == nil:
			after = func() { ch.next(context.WithoutCancel(ctx)) }
		}
	case *ahp.ChatPendingMessageRemovedAction:
		switch {
		case b.Kind == ahp.PendingSteering && ch.cstate.SteeringMessage != nil && ch.cstate.SteeringMessage.ID == b.ID:
		case b.Kind == ahp.PendingQueued && slices.ContainsFunc(ch.cstate.QueuedMessages, func(m ahp.PendingMessage) bool { return m.ID == b.ID }):
		default:
			err = rejectf("no %s message %q is waiting", b.Kind, b.ID)
		}
		if err == nil {
			if !ch.emitChatLocked(a, &origin) {
				retry = true
				break
			}
		}
	case *ahp.ChatQueuedMessagesReorderedAction, *ahp.ChatDraftChangedAction, *ahp.ChatIsReadChangedAction, *ahp.ChatIsArchivedChangedAction:
		if !ch.emitChatLocked(a, &origin) {
			retry = true
			break
		}
	case *ahp.ChatInputAnswerChangedAction:
		if !at.OpenInputRequest(b.RequestID) {
			err = rejectf("no open input request %q", b.RequestID)
			break
		}
		if !ch.emitChatLocked(a, &origin) {
			retry = true
			break
		}
		after = ch.answerLocked(ctx, a)
	case *ahp.ChatInputCompletedAction:
		if !at.OpenInputRequest(b.RequestID) {
			err = rejectf("no open input request %q", b.RequestID)
			break
		}
		if !ch.emitChatLocked(a, &origin) {
			retry = true
			break
		}
		after = ch.answerLocked(ctx, a)
	case *ahp.ChatToolCallConfirmedAction:
		if tc := at.ToolCall(b.TurnID, b.ToolCallID); tc == nil || tc.Status != ahp.ToolCallStatusPendingConfirmation {
			err = rejectf("tool call %q does not wait for a confirmation", b.ToolCallID)
			break
		}
		if !ch.emitChatLocked(a, &origin) {
			retry = true
			break
		}
		after = ch.answerLocked(ctx, a)
	default:
		err = rejectf("a bot chat does not take %s", a.Type)
	}
	ch.mu.Unlock()
	if retry {
		return true, nil
	}
	if after != nil {
		after()
	}
	return false, err
}

// resumable returns the chat's latest turn when it is turnID and chat/turnResume
// may reopen it: no turn is active and its last part is an error that can
// be resumed (a turn the log showed interrupted).
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

// answerLocked returns the handing of a person's answer to the wake.
func (ch *chat) answerLocked(ctx context.Context, a ahp.Action) func() {
	t := ch.turn
	if t == nil {
		return nil
	}
	return func() {
		if err := t.Answer(context.WithoutCancel(ctx), a); err != nil {
			ch.c.s.log.Warn("bot: an answer could not be handed to the back session", "chat", ch.uri, "action", a.Type, "err", err)
		}
	}
}

// steer hands a steering message to the back session; one that cannot be
// handed on is dropped with the reason in the log. Either way it leaves
// the chat's pending message.
func (ch *chat) steer(ctx context.Context, t *wake.Turn, id, text string) {
	if err := t.Steer(ctx, text); err != nil {
		ch.c.s.log.Warn("bot: a steering message was dropped", "chat", ch.uri, "id", id, "reason", err.Error())
	}
	ch.mu.Lock()
	defer ch.mu.Unlock()
	for range maxBehind {
		if s := ch.cstate.SteeringMessage; s == nil || s.ID != id || ch.gone {
			return
		}
		if ch.emitChatLocked(ahp.PendingMessageRemoved(ahp.PendingSteering, id), nil) {
			return
		}
	}
}

// next starts the chat's first queued message as a turn when the chat is
// idle.
func (ch *chat) next(ctx context.Context) {
	if ch.c.closed.Load() {
		return
	}
	ch.mu.Lock()
	ch.syncLocked()
	var after func()
	for range maxBehind {
		if ch.gone || ch.cstate.ActiveTurn != nil || ch.turn != nil || len(ch.cstate.QueuedMessages) == 0 {
			break
		}
		q := ch.cstate.QueuedMessages[0]
		a := ahp.TurnStartedFromQueue(newTurnID(), ch.c.s.now(), q.ID, q.Message)
		if ch.emitChatLocked(a, nil) {
			after = ch.beginLocked(ctx, a.Body.(*ahp.ChatTurnStartedAction))
			break
		}
	}
	ch.mu.Unlock()
	if after != nil {
		after()
	}
}

// beginLocked answers a turn just begun: it wakes the bot's back session,
// or fails the turn when the bot is gone. It returns what to do once
// ch.mu is released.
func (ch *chat) beginLocked(ctx context.Context, b *ahp.ChatTurnStartedAction) func() {
	s := ch.c.s
	ctx = context.WithoutCancel(ctx) // the turn outlives the request that began it
	ctx, span := s.turnSpan(ctx)
	e, err := s.store.Get(ctx, ch.bot)
	if err == nil && s.chatOfHidden(ctx, ch.bot, ch.sstate.WorkingDirectories) {
		err = errHiddenChat
	}
	var r record.Record
	if err == nil {
		var bt Bot
		if bt, err = s.withPersona(ctx, e, true); err == nil {
			r = bt.Record
			err = s.writeBundled(ctx, ch.bot)
		}
	}
	if err != nil {
		reason := "The bot " + uri(ch.bot) + " has been deleted."
		if errors.Is(err, errHiddenChat) {
			reason = "The bot " + uri(ch.bot) + " this chat is with is hidden by a bot of its slug bundled with this host: the bot and this chat are kept, and it answers here again once the host no longer ships that slug."
		} else if !errors.Is(err, record.ErrNotFound) {
			reason = "The bot " + uri(ch.bot) + " could not be read: " + errcode.Message(err)
		}
		failed := ahp.TurnFailed(b.TurnID, 0, ahp.ErrorInfo{ErrorType: wake.ErrorSendFailed, Message: reason}, false)
		for range maxBehind {
			if at := ch.cstate.ActiveTurn; ch.gone || at == nil || at.ID != b.TurnID || ch.emitChatLocked(failed, nil) {
				break
			}
		}
		endSpan(span, outcomeError)
		return func() { ch.next(context.WithoutCancel(ctx)) }
	}
	mark := botMark(r)
	for range maxBehind {
		if sameMark(mark, ch.mark) {
			break
		}
		// When another instance wrote first, the lines it wrote set the
		// mark they carry, and the loop decides again.
		ch.mark = mark
		if ch.emitSessionLocked(ahp.SessionMetaChanged(map[string]any{BotMeta: mark}), nil, true) {
			break
		}
	}
	if at := ch.cstate.ActiveTurn; ch.gone || at == nil || at.ID != b.TurnID {
		endSpan(span, "")
		return nil // another instance ended the turn meanwhile
	}
	// The turn acts for the chat's owner: they must still read the bot,
	// whoever began it.
	if !CanRead(s.personNow(ch.owner), r) {
		failed := ahp.TurnFailed(b.TurnID, 0, ahp.ErrorInfo{ErrorType: wake.ErrorSendFailed, Message: ownerLostReason(ch)}, false)
		for range maxBehind {
			if at := ch.cstate.ActiveTurn; ch.gone || at == nil || at.ID != b.TurnID || ch.emitChatLocked(failed, nil) {
				break
			}
		}
		return nil
	}
	// The turn is measured by the server's clock: a client's startedAt
	// says when its clock thinks the turn began, which may be a day off.
	started := s.now()
	msg := wake.Message{
		Bot: r, Person: ch.owner, Session: ch.session, Chat: ch.uri, TurnID: b.TurnID, Text: b.Message.Text, StartedAt: started,
		Via: viaOf(b.Message.Meta), Route: routeOf(b.Message.Meta),
	}
	t := ch.c.waker.WakeContext(ctx, msg, mainTurn{ch: ch, turnID: b.TurnID})
	ch.turn, ch.turnID, ch.began = t, b.TurnID, started
	return func() {
		if ch.c.leases != nil {
			key := turnKey(ch.session, b.TurnID)
			ch.c.goTask(func() { ch.c.holdTurn(ch.c.ctx, key, t.Done()) })
		}
		go func() {
			<-t.Done()
			ch.mu.Lock()
			if ch.turn == t {
				ch.turn = nil
			}
			outcome := ch.outcome
			ch.mu.Unlock()
			endSpan(span, outcome)
			ch.next(context.Background())
		}()
	}
}

func sameMark(a, b map[string]any) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		w, ok := b[k]
		if !ok {
			return false
		}
		switch x := v.(type) {
		case []string:
			y, ok := w.([]string)
			if !ok {
				ys, ok := w.([]any)
				if !ok || len(ys) != len(x) {
					return false
				}
				for i := range x {
					if ys[i] != x[i] {
						return false
					}
				}
				continue
			}
			if !slices.Equal(x, y) {
				return false
			}
		default:
			if v != w {
				return false
			}
		}
	}
	return true
}

// mainTurn is one main turn as the wake answers into it.
type mainTurn struct {
	ch     *chat
	turnID string
}

// Chat applies a server action to the main turn while it is active.
func (m mainTurn) Chat(a ahp.Action) bool {
	ch := m.ch
	ch.mu.Lock()
	defer ch.mu.Unlock()
	for range maxBehind {
		if ch.gone || ch.cstate.ActiveTurn == nil || ch.cstate.ActiveTurn.ID != m.turnID {
			return false
		}
		if ch.emitChatLocked(a, nil) {
			return true
		}
	}
	ch.c.s.log.Warn("bot: a main turn's action was not written: other instances kept writing the chat first", "chat", ch.uri, "action", a.Type)
	return false
}

// Session applies a server action to the chat's session: the back
// session's requests listed on inputNeeded.
func (m mainTurn) Session(a ahp.Action) {
	ch := m.ch
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if ch.gone {
		return
	}
	ch.emitSessionLocked(a, nil, false)
}

// routeOf is the route a message's _meta names (route.RouteMeta), "" for
// none or one that is no route id. A client may name any: a route only
// narrows the tools of the back session its turns run in.
func routeOf(meta map[string]any) string {
	r, _ := meta[route.RouteMeta].(string)
	if !route.ValidID(r) {
		return ""
	}
	return r
}

// viaOf is the via line of a message's _meta: one line of at most 200
// characters, without the characters that could close the context block.
func viaOf(meta map[string]any) string {
	v, _ := meta[route.ViaMeta].(string)
	v = strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f || r == '<' || r == '>' || r == 0x2028 || r == 0x2029 {
			return ' '
		}
		return r
	}, v)
	v = strings.TrimSpace(v)
	if r := []rune(v); len(r) > 200 {
		v = string(r[:200]) + "…"
	}
	return v
}
