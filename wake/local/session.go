package local

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/engine"
	"github.com/agenthost/bots/lease"
	"github.com/agenthost/bots/replica"
	"github.com/agenthost/bots/telemetry"
	"github.com/agenthost/bots/wake"
)

// One back session Host runs: its state, the actions it applies and
// publishes, its queue of messages and the turn it runs.

// localSession is one session Host runs.
type localSession struct {
	// Chat holds the session's and its chat's states, publishes them (on
	// the bus and its Feed, which Follow reads), and is its writer lock
	// (Lock): whoever acts on the session (a client's action, the turn's
	// agent, the follower) holds it, across a write to its log too. The
	// fields below that change are guarded by it.
	replica.Chat
	h    *Host
	spec wake.Spec
	hr   wake.Harness
	info wake.SessionInfo // what the agent is opened with
	// createdAt is when the session started (ISO 8601).
	createdAt string
	// tail is the session's place in its log when logged: its key, and
	// how many lines it holds as far as this host knows (read back, or
	// written; set under Lock). An unlogged session keeps none.
	tail   replica.Log
	logged bool
	// fence is the lease token its log's writes carry, when a Waker
	// holding a lease handed it work (lease.WithFence); set under Lock.
	fence  lease.Fence
	fenced bool
	// here says this host writes the session's log (it started it, read
	// it back to continue it, or a Waker holding its lease handed it
	// work); with shared logs a session not here is a copy that follows
	// the log another host writes, and takes clients' answers alone
	// (follow.go). diverged says a write to the log failed: the copy
	// holds a line the log does not. Both set under Lock.
	here     bool
	diverged bool
	turn     *localTurn
	waits    map[string]chan ahp.Action // tool call or request id → its answer
	// agent is the session's agent, nil until a restored session's first
	// turn opens it.
	agent wake.Agent
	// parent is the span of the wake that sent the last message, the
	// parent of the next turn's, with traces on.
	parent trace.SpanContext
}

// localTurn is the turn a session's agent runs.
type localTurn struct {
	id      string
	started time.Time
	cancel  context.CancelFunc
	stopped bool                     // the turn was cancelled; nothing more is emitted for it
	reply   string                   // the reply's markdown part, once opened
	reason  string                   // the reasoning part, once opened
	tools   map[string]*reportedTool // the agent's own tool calls by the agent's id
}

// reportedTool is one of the agent's own tool calls shown in the turn.
type reportedTool struct {
	id    string // the call's tool call id in the chat
	title string
	done  bool
}

// dispose stops the running turn, ends the channels and closes the agent.
// fenceFrom takes the fence ctx carries, if any, for the session's later
// log writes.
func (s *localSession) fenceFrom(ctx context.Context) {
	if f, ok := lease.FenceFrom(ctx); ok {
		s.Lock()
		s.fence, s.fenced, s.here = f, true, true
		s.Unlock()
	}
}

// fencedLocked is the context of the session's log writes: with its
// fence, if it has one. Called with s locked.
func (s *localSession) fencedLocked() context.Context {
	if s.fenced {
		return lease.WithFence(context.Background(), s.fence)
	}
	return context.Background()
}

func (s *localSession) dispose() {
	s.Lock()
	if !s.End() {
		s.Unlock()
		return
	}
	if t := s.turn; t != nil {
		t.stopped = true
		t.cancel()
	}
	agent := s.agent
	s.Unlock()
	s.Feed.Close()
	s.h.bus.End(s.SessionURI)
	s.h.bus.End(s.ChatURI)
	if agent == nil {
		return
	}
	if err := agent.Close(); err != nil {
		s.h.log.Warn("wake: closing an agent failed", "session", s.SessionURI, "err", err)
	}
}

// emitChatLocked applies a to the chat, publishes it and tells followers;
// the session's catalogue follows the chat's status. The chat holds its
// latest ended turns only: a snapshot has those, with no turnsNextCursor,
// as the older ones are gone. It reports false when a is an answer that
// another host's answer, logged first, made moot: a is then neither
// logged nor applied. Called with s locked.
func (s *localSession) emitChatLocked(a ahp.Action, origin *engine.Origin) bool {
	a = wake.ScrubAction(s.h.scrub, a)
	if !s.logLocked(replica.LineChat, a) {
		return false
	}
	s.showChatLocked(a, origin)
	return true
}

// showChatLocked applies a to the chat, publishes it (on the bus and the
// feed), and updates the session's catalogue when the chat's status
// changed: what emitChatLocked does once a is logged, and what a copy
// does with a line another host wrote. Called with s locked.
func (s *localSession) showChatLocked(a ahp.Action, origin *engine.Origin) {
	s.Apply(a, origin)
}

// emitSessionLocked applies a to the session and publishes it; a client's
// action (origin set) is logged. Called with s locked.
func (s *localSession) emitSessionLocked(a ahp.Action, origin *engine.Origin) {
	a = wake.ScrubAction(s.h.scrub, a)
	if origin != nil {
		s.logLocked(replica.LineSession, a)
	}
	s.ApplySession(a, origin)
}

// refused is a refusal of the host, for reason (a format and its args).
func refused(format string, args ...any) error {
	return &wake.RefusedError{Reason: fmt.Sprintf(format, args...)}
}

// refusal is the host's refusal of what replica.Decide refused, nil for
// nil.
func refusal(err error) error {
	if r, ok := errors.AsType[*replica.Refusal](err); ok {
		return &wake.RefusedError{Reason: r.Reason}
	}
	return err
}

// backRules are what a back session's chat takes beyond what every chat
// does: the results of a client's tools it calls.
var backRules = replica.Rules{ClientTools: true}

// dispatch validates and applies a client's action to the chat; origin is
// nil for an in-process caller.
func (s *localSession) dispatch(a ahp.Action, origin *engine.Origin) error {
	s.Lock()
	defer s.Unlock()
	if s.Gone() {
		return wake.ErrNoSession
	}
	if s.elsewhereLocked() != nil && replica.AnswerTo(a) != "" && origin != nil {
		// A client's answer; an in-process caller (the Waker of this
		// instance, following a turn another runs) acts only where the
		// session runs.
		return s.answerElsewhereLocked(a, origin)
	}
	if err := s.elsewhereLocked(); err != nil {
		return err
	}
	step, err := replica.Decide(s.ChatState(), a, backRules, origin)
	if err != nil {
		return refusal(err)
	}
	switch step {
	case replica.Begin:
		if s.turn != nil { // ended in the chat, still winding down
			return refused("a turn is in progress")
		}
		b := a.Body.(*ahp.ChatTurnStartedAction)
		s.emitChatLocked(a, origin)
		s.runLocked(b.TurnID, b.Message)
	case replica.Stop:
		b := a.Body.(*ahp.ChatTurnCancelledAction)
		if origin == nil && b.Duration == 0 {
			a = ahp.TurnCancelled(b.TurnID, s.durationLocked())
		}
		if t := s.turn; t != nil && t.id == b.TurnID {
			t.stopped = true
			t.cancel()
		}
		s.emitChatLocked(a, origin)
		s.turn = nil
		s.nextLocked()
	case replica.Pend:
		s.emitChatLocked(a, origin)
		s.nextLocked()
	case replica.Answer:
		if s.emitChatLocked(a, origin) {
			s.deliverAnswerLocked(a)
		}
	default:
		s.emitChatLocked(a, origin)
	}
	return nil
}

// dispatchSession applies a client's action to the session channel.
func (s *localSession) dispatchSession(a ahp.Action, origin *engine.Origin) error {
	s.Lock()
	defer s.Unlock()
	if s.Gone() {
		return wake.ErrNoSession
	}
	if err := s.elsewhereLocked(); err != nil {
		return err
	}
	switch a.Body.(type) {
	case *ahp.SessionTitleChangedAction, *ahp.SessionIsReadChangedAction, *ahp.SessionIsArchivedChangedAction:
		s.emitSessionLocked(a, origin)
		return nil
	}
	return refused("this session does not take %s", a.Type)
}

func (s *localSession) deliverLocked(id string, a ahp.Action) {
	if ch, ok := s.waits[id]; ok {
		delete(s.waits, id)
		ch <- a
	}
}

func (s *localSession) durationLocked() time.Duration {
	if s.turn != nil {
		return s.h.now().Sub(s.turn.started)
	}
	if at := s.ChatState().ActiveTurn; at != nil {
		if t, err := time.Parse(time.RFC3339Nano, at.StartedAt); err == nil {
			return s.h.now().Sub(t)
		}
	}
	return 0
}

// nextLocked starts the next waiting message when the chat is idle: the
// steering message first, then the queue.
func (s *localSession) nextLocked() {
	if s.turn != nil || s.Gone() || s.ChatState().ActiveTurn != nil {
		return
	}
	if id, msg, ok := s.startWaitingLocked(); ok {
		s.runLocked(id, msg)
	}
}

// startWaitingLocked starts the turn of the next waiting message, the
// steering message first, then the queue, and returns its id and message;
// ok is false when none waits.
func (s *localSession) startWaitingLocked() (id string, msg ahp.Message, ok bool) {
	var next *ahp.PendingMessage
	switch {
	case s.ChatState().SteeringMessage != nil:
		next = s.ChatState().SteeringMessage
	case len(s.ChatState().QueuedMessages) > 0:
		next = &s.ChatState().QueuedMessages[0]
	default:
		return "", ahp.Message{}, false
	}
	id = newID()
	s.emitChatLocked(ahp.TurnStartedFromQueue(id, s.h.now(), next.ID, next.Message), nil)
	return id, next.Message, true
}

// runLocked runs the agent's turn id in a goroutine of its own, which the
// host's Close waits for. A session not gone is held by the host, so no
// turn starts once Close has disposed every session.
func (s *localSession) runLocked(id string, msg ahp.Message) {
	ctx, cancel := context.WithCancel(traced(context.Background(), s.parent))
	t := &localTurn{id: id, started: s.h.now(), cancel: cancel}
	s.turn = t
	s.h.turns.Add(1)
	go func() {
		defer s.h.turns.Done()
		s.run(ctx, t, msg)
	}()
}

func (s *localSession) run(ctx context.Context, t *localTurn, msg ahp.Message) {
	w := &work{s: s, t: t, msg: msg}
	ctx = wake.WithProgress(ctx, w.progress)
	ctx, op := s.h.hub.Begin(ctx, telemetry.Cell{}, instr, "back turn", attribute.String("bots.agent", s.info.Provider))
	agent, err := s.open(ctx)
	if err == nil {
		err = runScrubbed(ctx, agent, w, s.h.scrub)
	}
	op.End(err)
	t.cancel()
	s.Lock()
	defer s.Unlock()
	if s.turn == t || s.turn == nil {
		s.showActivityLocked("")
	}
	if t.stopped || s.turn != t {
		return
	}
	d := s.h.now().Sub(t.started)
	if err != nil {
		s.h.log.Info("wake: a back turn failed", "session", s.SessionURI, "turn", t.id, "err", err)
		s.emitChatLocked(ahp.TurnFailed(t.id, d, ahp.ErrorInfo{ErrorType: "agentError", Message: err.Error()}, false), nil)
		if errors.Is(err, wake.ErrNotStarted) {
			s.failWaitingLocked(err)
		}
	} else {
		s.emitChatLocked(ahp.TurnComplete(t.id, d), nil)
	}
	s.turn = nil
	s.nextLocked()
}

// open returns the session's agent, opening it on the first turn of a
// restored session. A session disposed meanwhile closes the agent it
// opened.
func (s *localSession) open(ctx context.Context) (wake.Agent, error) {
	s.Lock()
	agent := s.agent
	s.Unlock()
	if agent != nil {
		return agent, nil
	}
	agent, err := s.hr.Open(ctx, s.info)
	if err != nil {
		return nil, fmt.Errorf("the agent did not start: %w", err)
	}
	s.Lock()
	gone := s.Gone()
	if !gone {
		s.agent = agent
	}
	s.Unlock()
	if gone {
		agent.Close()
		return nil, wake.ErrNoSession
	}
	return agent, nil
}

// showActivityLocked shows text as the chat's activity ("" clears it):
// what a start of the agent during a turn is doing. It is published and
// not logged: it means nothing once the turn is over. Called with s
// locked.
func (s *localSession) showActivityLocked(text string) {
	if s.Gone() || s.ChatState().Activity == text {
		return
	}
	s.showChatLocked(wake.ScrubAction(s.h.scrub, ahp.ChatActivityChanged(text)), nil)
}

// failWaitingLocked fails, with err, each message waiting in the chat
// behind a turn whose agent could not be started: each becomes a turn that
// fails at once. Called with s locked.
func (s *localSession) failWaitingLocked(err error) {
	for n := len(s.ChatState().QueuedMessages) + 1; n > 0 && !s.Gone(); n-- {
		id, _, ok := s.startWaitingLocked()
		if !ok {
			return
		}
		s.emitChatLocked(ahp.TurnFailed(id, 0, ahp.ErrorInfo{ErrorType: "agentError", Message: err.Error()}, false), nil)
	}
}
