package client

import (
	"context"
	"encoding/json"
	"errors"
	"iter"
	"strings"
	"sync"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/errcode"
)

// ChatProvider is the session provider of a chat with a bot.
const ChatProvider = "bot-chat"

// methodFetchTurns asks a chat for its older turns.
const methodFetchTurns = "fetchTurns"

// Chat is a subscription to a chat with a bot: its state, reduced from
// the server's actions with ahp.ApplyChat, and the turns this client
// started in it.
type Chat struct {
	c       *Client
	session string
	uri     string

	mu      sync.Mutex
	state   ahp.ChatState
	seq     int64
	turns   map[string]*Turn      // by turn id: the turns still running
	queued  map[string]*Turn      // by pending message id: sent while a turn ran
	acks    map[int64]chan string // by clientSeq: the rejection reason ("" accepted)
	err     error                 // why the subscription ended
	changed chan struct{}         // closed and replaced at each action
}

// SessionURI is the URI of a new chat's session: ahp-session:/ and a
// fresh ULID.
func SessionURI() string { return "ahp-session:/" + strings.ToLower(ulid.Make().String()) }

// ChatURI is the URI of the chat of session.
func ChatURI(session string) string { return ahp.DefaultChatURI(session) }

// OpenChat opens a new chat with the bot slug (a new session of the
// bot-chat provider) and subscribes to it.
func (c *Client) OpenChat(ctx context.Context, slug string) (*Chat, error) {
	session := SessionURI()
	err := c.Call(ctx, ahp.MethodCreateSession, ahp.CreateSessionParams{
		Channel: session, Provider: ChatProvider, Config: map[string]any{"bot": slug},
	}, nil)
	if err != nil {
		return nil, err
	}
	return c.JoinChat(ctx, session)
}

// JoinChat subscribes to the chat of an existing session (another
// client's, or one listed by listSessions).
func (c *Client) JoinChat(ctx context.Context, session string) (*Chat, error) {
	return c.follow(ctx, session, ChatURI(session))
}

// FollowChat subscribes to the chat at uri: a back session's own chat,
// as the content of a turn's subagent tool call names it, say. Its
// Session is "".
func (c *Client) FollowChat(ctx context.Context, uri string) (*Chat, error) {
	return c.follow(ctx, "", uri)
}

func (c *Client) follow(ctx context.Context, session, uri string) (*Chat, error) {
	ch := &Chat{c: c, session: session, uri: uri,
		turns: map[string]*Turn{}, queued: map[string]*Turn{}, acks: map[int64]chan string{},
		changed: make(chan struct{})}
	if err := c.subscribe(ctx, ch.uri, ch); err != nil {
		if session != "" && errcode.Of(err) == errcode.NotFound {
			return nil, errcode.Wrap(errcode.NotFound, err, "no chat of session %s", session)
		}
		return nil, err
	}
	return ch, nil
}

// Session is the chat's session URI.
func (ch *Chat) Session() string { return ch.session }

// URI is the chat's channel URI.
func (ch *Chat) URI() string { return ch.uri }

// State is the chat's state now. Treat it as read-only: it shares
// structure with the states before and after it.
func (ch *Chat) State() ahp.ChatState {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	return ch.state
}

// WaitFor returns the chat's state once cond holds of it, waiting for
// the actions that make it so.
func (ch *Chat) WaitFor(ctx context.Context, cond func(ahp.ChatState) bool) (ahp.ChatState, error) {
	for {
		ch.mu.Lock()
		s, changed, err := ch.state, ch.changed, ch.err
		ch.mu.Unlock()
		if cond(s) {
			return s, nil
		}
		if err != nil {
			return s, err
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return s, ctx.Err()
		}
	}
}

// Close unsubscribes from the chat; its turns' events end with ErrClosed.
func (ch *Chat) Close(ctx context.Context) error { return ch.c.unsubscribe(ctx, ch.uri, ch) }

// Send says text in the chat and returns the turn it starts. When a turn
// is running, the message waits in the chat's queue, and the turn
// begins once the running one ends.
func (ch *Chat) Send(ctx context.Context, text string) (*Turn, error) {
	return ch.SendMessage(ctx, ahp.UserMessage(text))
}

// SendMessage is Send of a whole user message: its text with _meta or
// attachments.
func (ch *Chat) SendMessage(ctx context.Context, m ahp.Message) (*Turn, error) {
	t := newTurn(ch)
	ch.mu.Lock()
	busy := ch.state.ActiveTurn != nil
	ch.mu.Unlock()
	if !busy {
		t.id = strings.ToLower(ulid.Make().String())
		ch.mu.Lock()
		ch.turns[t.id] = t
		ch.mu.Unlock()
		err := ch.dispatch(ctx, ahp.TurnStarted(t.id, time.Now(), m))
		if err == nil {
			return t, nil
		}
		ch.mu.Lock()
		delete(ch.turns, t.id)
		ch.mu.Unlock()
		if !strings.Contains(err.Error(), "a turn is in progress") {
			return nil, err
		}
		t = newTurn(ch) // another client's turn began first: queue behind it
	}
	id := strings.ToLower(ulid.Make().String())
	ch.mu.Lock()
	ch.queued[id] = t
	ch.mu.Unlock()
	if err := ch.dispatch(ctx, ahp.PendingMessageSet(ahp.PendingQueued, id, m)); err != nil {
		ch.mu.Lock()
		delete(ch.queued, id)
		ch.mu.Unlock()
		return nil, err
	}
	return t, nil
}

// Answer answers the question request with text answers by question id
// (accepting it), as a person answers in the page.
func (ch *Chat) Answer(ctx context.Context, request string, answers map[string]string) error {
	all := make(map[string]ahp.ChatInputAnswer, len(answers))
	for q, v := range answers {
		all[q] = ahp.ChatInputAnswer{State: "submitted", Value: &ahp.ChatInputAnswerValue{Kind: "text", Value: v}}
	}
	return ch.dispatch(ctx, ahp.InputCompleted(request, ahp.InputAccept, all))
}

// Decline declines the question request.
func (ch *Chat) Decline(ctx context.Context, request string) error {
	return ch.dispatch(ctx, ahp.InputCompleted(request, ahp.InputDecline, nil))
}

// Approve approves (or, with approved false, denies) the tool call of
// the turn that waits for a confirmation.
func (ch *Chat) Approve(ctx context.Context, turn, toolCall string, approved bool) error {
	return ch.dispatch(ctx, ahp.ToolCallConfirmed(turn, toolCall, approved))
}

// Stop stops the running turn; its events end with its end, cancelled.
func (ch *Chat) Stop(ctx context.Context, turn string) error {
	return ch.dispatch(ctx, ahp.TurnCancelled(turn, 0))
}

// Resume runs again the chat's latest turn, which ended with an error
// that can be resumed (an interrupted turn, after a restart), and
// returns it.
func (ch *Chat) Resume(ctx context.Context, turn string) (*Turn, error) {
	t := newTurn(ch)
	t.id = turn
	ch.mu.Lock()
	ch.turns[turn] = t
	ch.mu.Unlock()
	if err := ch.dispatch(ctx, ahp.TurnResume(turn)); err != nil {
		ch.mu.Lock()
		if ch.turns[turn] == t {
			delete(ch.turns, turn)
		}
		ch.mu.Unlock()
		return nil, err
	}
	return t, nil
}

// History returns every ended turn of the chat, oldest first: the chat
// opens on its latest turns, and History loads the older ones from the
// server first.
func (ch *Chat) History(ctx context.Context) ([]ahp.Turn, error) {
	for {
		cursor := ch.State().TurnsNextCursor
		if cursor == "" {
			break
		}
		// the older turns come as chat/turnsLoaded before the answer.
		if err := ch.c.Call(ctx, methodFetchTurns, map[string]string{"channel": ch.uri, "cursor": cursor}, nil); err != nil {
			return nil, err
		}
		if ch.State().TurnsNextCursor == cursor {
			return nil, errcode.New(errcode.Internal, "fetchTurns on %s did not move the cursor %q", ch.uri, cursor)
		}
	}
	return append([]ahp.Turn(nil), ch.State().Turns...), nil
}

// dispatch sends an action to the chat and waits for the server to take
// it (its echo) or refuse it (errcode.Invalid with the reason).
func (ch *Chat) dispatch(ctx context.Context, a ahp.Action) error {
	seq := ch.c.nextSeq()
	ack := make(chan string, 1)
	ch.mu.Lock()
	ch.acks[seq] = ack
	ch.mu.Unlock()
	defer func() {
		ch.mu.Lock()
		delete(ch.acks, seq)
		ch.mu.Unlock()
	}()
	err := ch.c.notify(ctx, ahp.MethodDispatchAction, ahp.DispatchActionParams{Channel: ch.uri, ClientSeq: seq, Action: a})
	if err != nil {
		return err
	}
	select {
	case reason := <-ack:
		if reason != "" {
			return errcode.New(errcode.Invalid, "%s was refused: %s", a.Type, reason)
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-ch.c.done:
		return ErrClosed
	}
}

// turnOf is the id of the turn an action is about: its turnId, or the
// running turn's for the actions that carry none.
func turnOf(s ahp.ChatState, a ahp.Action) string {
	var b struct {
		TurnID string `json:"turnId"`
	}
	if a.Body != nil {
		raw, err := json.Marshal(a.Body)
		if err == nil && json.Unmarshal(raw, &b) == nil && b.TurnID != "" {
			return b.TurnID
		}
	}
	if s.ActiveTurn != nil {
		return s.ActiveTurn.ID
	}
	return ""
}

func (ch *Chat) apply(env ahp.ActionEnvelope) {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if o := env.Origin; o != nil && o.ClientID == ch.c.opts.ClientID {
		if ack := ch.acks[o.ClientSeq]; ack != nil {
			select {
			case ack <- env.RejectionReason:
			default:
			}
		}
	}
	if env.RejectionReason != "" {
		return
	}
	if env.ServerSeq != 0 && env.ServerSeq <= ch.seq {
		return // had already (a replay after a reconnect)
	}
	ch.seq = max(ch.seq, env.ServerSeq)
	if b, ok := env.Action.Body.(*ahp.ChatTurnStartedAction); ok && b.QueuedMessageID != "" {
		if t := ch.queued[b.QueuedMessageID]; t != nil {
			delete(ch.queued, b.QueuedMessageID)
			t.setID(b.TurnID)
			ch.turns[b.TurnID] = t
		}
	}
	id := turnOf(ch.state, env.Action)
	ch.state = ahp.ApplyChat(ch.state, env.Action)
	close(ch.changed)
	ch.changed = make(chan struct{})
	if t := ch.turns[id]; t != nil {
		t.take(ch.state, env.Action)
		if t.last != nil {
			delete(ch.turns, id)
		}
	}
}

func (ch *Chat) reset(s ahp.Snapshot) {
	raw, _ := s.State.(json.RawMessage)
	var st ahp.ChatState
	if err := json.Unmarshal(raw, &st); err != nil {
		ch.c.log.Warn("client: a chat's snapshot does not decode", "chat", ch.uri, "err", err)
		return
	}
	ch.mu.Lock()
	defer ch.mu.Unlock()
	ch.state, ch.seq = st, s.FromSeq
	close(ch.changed)
	ch.changed = make(chan struct{})
	// a turn that ended while the connection was down ends now.
	for id, t := range ch.turns {
		for i := range st.Turns {
			if st.Turns[i].ID == id {
				t.finish(st.Turns[i])
				delete(ch.turns, id)
			}
		}
	}
}

func (ch *Chat) end(err error) {
	ch.mu.Lock()
	defer ch.mu.Unlock()
	if ch.err == nil {
		ch.err = err
		close(ch.changed)
		ch.changed = make(chan struct{})
	}
	for _, t := range ch.turns {
		t.events.end(err)
	}
	for _, t := range ch.queued {
		t.events.end(err)
	}
}

// EventKind says what an Event of a turn is.
type EventKind string

// The kinds of a turn's events.
const (
	EventStarted   EventKind = "started"   // the turn began (after a wait in the queue, or a resume)
	EventPart      EventKind = "part"      // a response part was appended: Part
	EventDelta     EventKind = "delta"     // text was appended to the markdown part PartID: Text
	EventReasoning EventKind = "reasoning" // text was appended to the reasoning part PartID: Text
	EventToolCall  EventKind = "toolCall"  // a tool call began or changed: ToolCall
	EventApproval  EventKind = "approval"  // a tool call waits for Chat.Approve: ToolCall
	EventQuestion  EventKind = "question"  // a question waits for Chat.Answer: Question
	EventEnd       EventKind = "end"       // the turn ended: Turn (its State says how)
	EventOther     EventKind = "other"     // any other action of the turn: Action
)

// Event is one step of a turn.
type Event struct {
	Kind EventKind
	// Action is the action the event comes from.
	Action ahp.Action
	// Part is the part appended (EventPart).
	Part *ahp.ResponsePart
	// PartID and Text are the part and the text appended (EventDelta,
	// EventReasoning).
	PartID, Text string
	// ToolCall is the tool call as it stands after the action
	// (EventToolCall, EventApproval).
	ToolCall *ahp.ToolCallState
	// Question is the question asked (EventQuestion).
	Question *ahp.ChatInputRequest
	// Turn is the ended turn (EventEnd).
	Turn *ahp.Turn
}

// Turn is a turn this client started: its events arrive in order as the
// server sends them, and end with EventEnd.
type Turn struct {
	ch     *Chat
	events *queue[Event]
	idSet  chan struct{} // closed once id is known (a queued message's turn begins)
	id     string        // guarded by ch.mu until idSet is closed
	last   *ahp.Turn     // the turn as it ended; guarded by ch.mu
}

func newTurn(ch *Chat) *Turn {
	return &Turn{ch: ch, events: newQueue[Event](), idSet: make(chan struct{})}
}

// errEnded ends a turn's events after EventEnd.
var errEnded = errors.New("client: the turn ended")

// ID returns the turn's id, waiting for it when the turn's message still
// waits in the chat's queue.
func (t *Turn) ID(ctx context.Context) (string, error) {
	t.ch.mu.Lock()
	id := t.id
	t.ch.mu.Unlock()
	if id != "" {
		return id, nil
	}
	select {
	case <-t.idSet:
		t.ch.mu.Lock()
		defer t.ch.mu.Unlock()
		return t.id, nil
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// setID names the turn; called with ch.mu held.
func (t *Turn) setID(id string) {
	t.id = id
	close(t.idSet)
}

// Next returns the turn's next event, waiting for it; after EventEnd it
// returns an error.
func (t *Turn) Next(ctx context.Context) (Event, error) { return t.events.next(ctx) }

// Events ranges over the turn's events up to and including EventEnd, or
// until ctx is done or the chat's subscription ends (with the error).
func (t *Turn) Events(ctx context.Context) iter.Seq2[Event, error] {
	return t.events.all(ctx, errEnded)
}

// Wait waits for the turn to end and returns it as it ended, also when
// Next or Events took its events first. A turn that ended in error
// (ahp.TurnStateError: its agent failed or is not there, the server
// stopped mid-turn) comes with a *TurnError saying why; a turn stopped
// (cancelled) is no error.
func (t *Turn) Wait(ctx context.Context) (ahp.Turn, error) {
	for e, err := range t.Events(ctx) {
		if err != nil {
			return ahp.Turn{}, err
		}
		if e.Kind == EventEnd {
			return *e.Turn, failed(*e.Turn)
		}
	}
	t.ch.mu.Lock()
	last := t.last
	t.ch.mu.Unlock()
	if last == nil {
		return ahp.Turn{}, errEnded
	}
	return *last, failed(*last)
}

// TurnError is the error of a turn that ended in error (Turn.Wait).
type TurnError struct {
	// TurnID is the turn's id.
	TurnID string
	// Info is the turn's error as the server gave it: ErrorType is for
	// programs (ahp.ErrorInfo), Message for people.
	Info ahp.ErrorInfo
}

// Error says the turn ended in error, and the server's message.
func (e *TurnError) Error() string {
	if e.Info.Message == "" {
		return "the turn ended in error"
	}
	return "the turn ended in error: " + e.Info.Message
}

// failed is the *TurnError of a turn that ended in error, else nil.
func failed(turn ahp.Turn) error {
	if turn.State != ahp.TurnStateError {
		return nil
	}
	e := &TurnError{TurnID: turn.ID}
	if f := turn.Failure(); f != nil {
		e.Info = *f
	}
	return e
}

// take makes the event of an action of the turn; s is the chat's state
// after it. Called with ch.mu held.
func (t *Turn) take(s ahp.ChatState, a ahp.Action) {
	e := Event{Action: a, Kind: EventOther}
	call := func(turn, id string) *ahp.ToolCallState { return s.ActiveTurn.ToolCall(turn, id) }
	switch b := a.Body.(type) {
	case *ahp.ChatTurnStartedAction:
		if t.id == "" {
			t.setID(b.TurnID)
		}
		e.Kind = EventStarted
	case *ahp.ChatTurnResumeAction:
		e.Kind = EventStarted
	case *ahp.ChatResponsePartAction:
		e.Kind, e.Part = EventPart, &b.Part
	case *ahp.ChatDeltaAction:
		e.Kind, e.PartID, e.Text = EventDelta, b.PartID, b.Content
	case *ahp.ChatReasoningAction:
		e.Kind, e.PartID, e.Text = EventReasoning, b.PartID, b.Content
	case *ahp.ChatInputRequestedAction:
		e.Kind, e.Question = EventQuestion, &b.Request
	case *ahp.ChatToolCallStartAction:
		e.Kind, e.ToolCall = EventToolCall, call(b.TurnID, b.ToolCallID)
	case *ahp.ChatToolCallDeltaAction:
		e.Kind, e.ToolCall = EventToolCall, call(b.TurnID, b.ToolCallID)
	case *ahp.ChatToolCallReadyAction:
		e.Kind, e.ToolCall = EventToolCall, call(b.TurnID, b.ToolCallID)
		if e.ToolCall != nil && e.ToolCall.Status == ahp.ToolCallStatusPendingConfirmation {
			e.Kind = EventApproval
		}
	case *ahp.ChatToolCallConfirmedAction:
		e.Kind, e.ToolCall = EventToolCall, call(b.TurnID, b.ToolCallID)
	case *ahp.ChatToolCallCompleteAction:
		e.Kind, e.ToolCall = EventToolCall, call(b.TurnID, b.ToolCallID)
	case *ahp.ChatToolCallContentChangedAction:
		e.Kind, e.ToolCall = EventToolCall, call(b.TurnID, b.ToolCallID)
	case *ahp.ChatTurnCompleteAction, *ahp.ChatTurnCancelledAction, *ahp.ChatErrorAction:
		for i := range s.Turns {
			if s.Turns[i].ID == t.id {
				t.finish(s.Turns[i])
				return
			}
		}
	}
	t.events.push(e)
}

// finish pushes EventEnd; called with ch.mu held.
func (t *Turn) finish(turn ahp.Turn) {
	if t.last != nil {
		return
	}
	t.last = &turn
	t.events.push(Event{Kind: EventEnd, Turn: &turn})
	t.events.end(errEnded)
}

// Replies returns the markdown replies of a turn, in order: what the bot
// posted.
func Replies(t ahp.Turn) []string { return t.Replies() }
