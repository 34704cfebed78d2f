package mainchat

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/engine"
	"github.com/agenthost/bots/errcode"
	"github.com/agenthost/bots/record"
	"github.com/agenthost/bots/replica"
	"github.com/agenthost/bots/route"
	"github.com/agenthost/bots/wake"
)

// Channel returns the session or chat channel of a bot chat at uri; ok is
// false when uri is neither, and err refuses a caller who may not use it.
func (c *Chats) Channel(ctx context.Context, caller engine.Caller, uri string) (engine.Channel, bool, error) {
	ch := c.get(uri)
	if ch == nil {
		return nil, false, nil
	}
	if !ch.mayUse(ctx, c.bots.Principal(caller.Principal)) {
		return nil, true, errcode.New(errcode.PermissionDenied, "Permission denied: %s", uri)
	}
	if uri == ch.SessionURI {
		return chatSession{ch}, true, nil
	}
	return chatChannel{ch}, true, nil
}

// chatSession is a bot chat's session channel.
type chatSession struct{ ch *chat }

func (s chatSession) URI() string { return s.ch.SessionURI }

func (s chatSession) Subscribe(ctx context.Context, sub *engine.Subscriber) (engine.Snapshot, error) {
	return s.ch.SessionSnapshot(), nil
}

// Dispatch takes the session actions a client may send: a title, read and
// archived.
func (s chatSession) Dispatch(ctx context.Context, d engine.Dispatch) error {
	a, err := d.Decode()
	if err != nil {
		return err
	}
	ch := s.ch
	ch.Lock()
	defer ch.Unlock()
	switch a.Body.(type) {
	case *ahp.SessionTitleChangedAction, *ahp.SessionIsReadChangedAction, *ahp.SessionIsArchivedChangedAction:
		origin := d.Origin
		for range replica.MaxBehind {
			ch.syncLocked()
			if ch.Gone() {
				return errcode.New(errcode.NotFound, "no session %s", ch.SessionURI)
			}
			if ch.emitSessionLocked(a, &origin, true) {
				return nil
			}
		}
		return errcode.New(errcode.Unavailable, "the session %s is being written by other instances; try again", ch.SessionURI)
	}
	return errcode.New(errcode.Invalid, "a bot chat's session does not take %s", a.Type)
}

// chatChannel is a bot chat's chat channel.
type chatChannel struct{ ch *chat }

func (c chatChannel) URI() string { return c.ch.ChatURI }

func (c chatChannel) Subscribe(ctx context.Context, sub *engine.Subscriber) (engine.Snapshot, error) {
	return c.ch.ChatSnapshot(), nil
}

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
	for range replica.MaxBehind {
		retry, err := ch.dispatch(ctx, a, origin)
		if !retry {
			return err
		}
	}
	return errcode.New(errcode.Unavailable, "the chat %s is being written by other instances; try again", ch.ChatURI)
}

// emitWhileLocked emits the chat action a while holds says it still
// applies to the chat as it is: when another instance wrote the chat
// first, the chat holds what it wrote and holds is asked again. It
// reports whether a was emitted. Called with ch locked.
func (ch *chat) emitWhileLocked(a ahp.Action, holds func(ahp.ChatState) bool) bool {
	for range replica.MaxBehind {
		if ch.Gone() || !holds(ch.ChatState()) {
			return false
		}
		if ch.emitChatLocked(a, nil) {
			return true
		}
	}
	ch.c.logger.Warn("bot: a chat action was not written: other instances kept writing the chat first", "chat", ch.ChatURI, "action", a.Type)
	return false
}

// activeIs holds of a chat whose active turn is turnID.
func activeIs(turnID string) func(ahp.ChatState) bool {
	return func(s ahp.ChatState) bool { return s.ActiveTurn != nil && s.ActiveTurn.ID == turnID }
}

// mainRules are what a bot chat takes beyond what every chat does: a
// resume of a turn its log showed interrupted.
var mainRules = replica.Rules{Resume: true}

// dispatch decides a person's action on the chat as this instance holds
// it (replica.Decide), logs and applies it, and then does its step;
// retry means another instance wrote the chat first and nothing was done.
func (ch *chat) dispatch(ctx context.Context, a ahp.Action, origin engine.Origin) (retry bool, err error) {
	ch.Lock()
	ch.syncLocked()
	if ch.Gone() {
		ch.Unlock()
		return false, errcode.New(errcode.NotFound, "no chat %s", ch.ChatURI)
	}
	step, err := replica.Decide(ch.ChatState(), a, mainRules, &origin)
	if err != nil {
		ch.Unlock()
		return false, errcode.New(errcode.Invalid, "%s", err.Error())
	}
	if !ch.emitChatLocked(a, &origin) {
		ch.Unlock()
		return true, nil
	}
	after := ch.stepLocked(ctx, step, a)
	ch.Unlock()
	if after != nil {
		after()
	}
	return false, nil
}

// stepLocked does the step of a person's action the chat has logged and
// applied: a turn begun (or resumed) wakes the back session, a stop stops
// it, a steering message goes to it and a queued one starts when the
// chat is idle, an answer is handed to it. It returns what to do once
// ch is unlocked. Called with ch locked.
func (ch *chat) stepLocked(ctx context.Context, step replica.Step, a ahp.Action) func() {
	switch step {
	case replica.Begin:
		return ch.beginLocked(ctx, a.Body.(*ahp.ChatTurnStartedAction))
	case replica.Resume:
		at := ch.ChatState().ActiveTurn // the turn resumed, with its message
		return ch.beginLocked(ctx, &ahp.ChatTurnStartedAction{TurnID: at.ID, StartedAt: ahp.FormatTime(ch.c.now()), Message: at.Message})
	case replica.Stop:
		if t := ch.turn; t != nil {
			ch.turn = nil
			return func() { t.Stop(); ch.next(context.WithoutCancel(ctx)) }
		}
	case replica.Pend:
		b := a.Body.(*ahp.ChatPendingMessageSetAction)
		switch {
		case b.Kind == ahp.PendingSteering && ch.turn != nil:
			t, id, text := ch.turn, b.ID, b.Message.Text
			return func() { ch.steer(context.WithoutCancel(ctx), t, id, text) }
		case ch.ChatState().ActiveTurn == nil:
			return func() { ch.next(context.WithoutCancel(ctx)) }
		}
	case replica.Answer:
		return ch.answerLocked(ctx, a)
	}
	return nil
}

// answerLocked returns the handing of a person's answer to the wake.
func (ch *chat) answerLocked(ctx context.Context, a ahp.Action) func() {
	t := ch.turn
	if t == nil {
		return nil
	}
	return func() {
		if err := t.Answer(context.WithoutCancel(ctx), a); err != nil {
			ch.c.logger.Warn("bot: an answer could not be handed to the back session", "chat", ch.ChatURI, "action", a.Type, "err", err)
		}
	}
}

// steer hands a steering message to the back session; one that cannot be
// handed on is dropped with the reason in the log. Either way it leaves
// the chat's pending message.
func (ch *chat) steer(ctx context.Context, t *wake.Turn, id, text string) {
	if err := t.Steer(ctx, text); err != nil {
		ch.c.logger.Warn("bot: a steering message was dropped", "chat", ch.ChatURI, "id", id, "reason", err.Error())
	}
	ch.Lock()
	defer ch.Unlock()
	ch.emitWhileLocked(ahp.PendingMessageRemoved(ahp.PendingSteering, id), func(s ahp.ChatState) bool {
		return s.SteeringMessage != nil && s.SteeringMessage.ID == id
	})
}

// next starts the chat's first queued message as a turn when the chat is
// idle.
func (ch *chat) next(ctx context.Context) {
	if ch.c.closed.Load() {
		return
	}
	ch.Lock()
	ch.syncLocked()
	var after func()
	for range replica.MaxBehind {
		if ch.Gone() || ch.ChatState().ActiveTurn != nil || ch.turn != nil || len(ch.ChatState().QueuedMessages) == 0 {
			break
		}
		q := ch.ChatState().QueuedMessages[0]
		a := ahp.TurnStartedFromQueue(newTurnID(), ch.c.now(), q.ID, q.Message)
		if ch.emitChatLocked(a, nil) {
			after = ch.beginLocked(ctx, a.Body.(*ahp.ChatTurnStartedAction))
			break
		}
	}
	ch.Unlock()
	if after != nil {
		after()
	}
}

// beginLocked answers a turn just begun: it wakes the bot's back session,
// or fails the turn when the bot is gone. It returns what to do once
// ch is unlocked.
func (ch *chat) beginLocked(ctx context.Context, b *ahp.ChatTurnStartedAction) func() {
	c := ch.c
	ctx = context.WithoutCancel(ctx) // the turn outlives the request that began it
	ctx, span := c.meters.turnSpan(ctx)
	r, err := c.bots.ForTurn(ctx, ch.bot, ch.SessionState().WorkingDirectories)
	if err != nil {
		reason := "The bot " + botURI(ch.bot) + " has been deleted."
		if errors.Is(err, ErrHidden) {
			reason = "The bot " + botURI(ch.bot) + " this chat is with is hidden by a bot of its slug bundled with this host: the bot and this chat are kept, and it answers here again once the host no longer ships that slug."
		} else if !errors.Is(err, record.ErrNotFound) {
			reason = "The bot " + botURI(ch.bot) + " could not be read: " + errcode.Message(err)
		}
		failed := ahp.TurnFailed(b.TurnID, 0, ahp.ErrorInfo{ErrorType: wake.ErrorSendFailed, Message: reason}, false)
		ch.emitWhileLocked(failed, activeIs(b.TurnID))
		endSpan(span, outcomeError)
		return func() { ch.next(context.WithoutCancel(ctx)) }
	}
	mark := botMark(r)
	for range replica.MaxBehind {
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
	if at := ch.ChatState().ActiveTurn; ch.Gone() || at == nil || at.ID != b.TurnID {
		endSpan(span, "")
		return nil // another instance ended the turn meanwhile
	}
	// The turn acts for the chat's owner: they must still read the bot,
	// whoever began it.
	if !c.bots.CanRead(c.bots.Person(ch.owner), r) {
		failed := ahp.TurnFailed(b.TurnID, 0, ahp.ErrorInfo{ErrorType: wake.ErrorSendFailed, Message: ownerLostReason(ch)}, false)
		ch.emitWhileLocked(failed, activeIs(b.TurnID))
		return nil
	}
	// The turn is measured by the server's clock: a client's startedAt
	// says when its clock thinks the turn began, which may be a day off.
	started := c.now()
	msg := wake.Message{
		Bot: r, Person: ch.owner, Session: ch.SessionURI, Chat: ch.ChatURI, TurnID: b.TurnID, Text: b.Message.Text, StartedAt: started,
		Via: viaOf(b.Message.Meta), Route: routeOf(b.Message.Meta),
	}
	t := ch.c.waker.WakeContext(ctx, msg, mainTurn{ch: ch, turnID: b.TurnID})
	ch.turn, ch.turnID, ch.began = t, b.TurnID, started
	return func() {
		if ch.c.leases != nil {
			key := turnKey(ch.SessionURI, b.TurnID)
			ch.c.goTask(func() { ch.c.holdTurn(ch.c.ctx, key, t.Done()) })
		}
		go func() {
			<-t.Done()
			ch.Lock()
			if ch.turn == t {
				ch.turn = nil
			}
			outcome := ch.outcome
			ch.Unlock()
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
	_, failed := a.Body.(*ahp.ChatErrorAction)
	// A turn whose owner may no longer read its bot is cancelled, however
	// it would end: losing access cancels it (closeTo), and the back
	// session may be gone first, disposed of by another instance's sweep.
	revoked := false
	if failed {
		v := ch.c.verdict(context.Background(), ch.bot, ch.owner)
		revoked = v == lost || v == gone
	}
	ch.Lock()
	defer ch.Unlock()
	if revoked {
		a = ahp.TurnCancelled(m.turnID, ch.c.now().Sub(ch.began))
	}
	return ch.emitWhileLocked(a, activeIs(m.turnID))
}

// Session applies a server action to the chat's session: the back
// session's requests listed on inputNeeded.
func (m mainTurn) Session(a ahp.Action) {
	ch := m.ch
	ch.Lock()
	defer ch.Unlock()
	if ch.Gone() {
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
