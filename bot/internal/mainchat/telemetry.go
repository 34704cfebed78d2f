package mainchat

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/agenthost/bots/ahp"
	"github.com/agenthost/bots/replica"
	"github.com/agenthost/bots/telemetry"
)

// instr names the spans of the main turns: those of package bot, whose
// chats these are.
const instr = "github.com/agenthost/bots/bot"

// The outcomes a main turn ends with, as bots_turns_total counts them.
const (
	outcomeComplete    = "complete"
	outcomeError       = "error"
	outcomeCancelled   = "cancelled"
	outcomeInterrupted = "interrupted"
)

// meters are the series the chats count into; nil series count
// nothing.
type meters struct {
	hub       *telemetry.Hub
	turns     *telemetry.Series // bots_turns_total{outcome}
	firstPart *telemetry.Series // bots_turn_first_part_seconds
	duration  *telemetry.Series // bots_turn_duration_seconds{outcome}
	takeovers *telemetry.Series // bots_lease_takeovers_total{kind="main_turn"}
	held      *telemetry.Series // bots_leases_held{kind="main_turn"}
}

// newMeters makes the chats' series in hub (none when hub is nil).
func newMeters(hub *telemetry.Hub) meters {
	outcome := telemetry.Label{Name: "outcome", Values: []string{outcomeComplete, outcomeError, outcomeCancelled, outcomeInterrupted}}
	m := meters{
		hub:       hub,
		turns:     hub.Counter("bots_turns_total", "Main chat turns ended, by outcome: complete, error, cancelled, or interrupted (its server stopped or died under it).", outcome),
		firstPart: hub.Histogram("bots_turn_first_part_seconds", "Time from a main turn's start to the first part of its answer.", nil),
		duration:  hub.Histogram("bots_turn_duration_seconds", "Time from a main turn's start to its end, by outcome.", nil, outcome),
		takeovers: hub.With("kind", "main_turn").Counter(telemetry.LeaseTakeovers, telemetry.LeaseTakeoversHelp),
		held:      hub.With("kind", "main_turn").Gauge(telemetry.LeasesHeld, telemetry.LeasesHeldHelp),
	}
	return m
}

// countChats makes bots_chats_open, read from c when asked.
func (m *meters) countChats(c *Chats) {
	m.hub.GaugeFunc("bots_chats_open", "Bot chats the service holds open.", func() float64 {
		c.mu.Lock()
		defer c.mu.Unlock()
		return float64(len(c.bySession))
	})
}

// observeLocked counts what a chat action written to ch says of its main
// turn: a start, the first part of the answer, an end. It is called for
// every action a chat writes, so it costs a switch when nothing is
// measured. Called with ch locked.
func (ch *chat) observeLocked(a ahp.Action) {
	m := &ch.c.meters
	if m.hub == nil {
		return
	}
	switch a.Type {
	case ahp.ActionChatTurnStarted, ahp.ActionChatTurnResume:
		ch.metered, ch.parted = time.Now(), false
	case ahp.ActionChatResponsePart, ahp.ActionChatDelta:
		if !ch.parted && !ch.metered.IsZero() {
			ch.parted = true
			m.firstPart.Since(ch.metered)
		}
	case ahp.ActionChatTurnComplete:
		ch.endLocked(outcomeComplete)
	case ahp.ActionChatTurnCancelled:
		ch.endLocked(outcomeCancelled)
	case ahp.ActionChatError:
		outcome := outcomeError
		if b, ok := a.Body.(*ahp.ChatErrorAction); ok && b.Part.Error.ErrorType == replica.InterruptedType {
			outcome = outcomeInterrupted
		}
		ch.endLocked(outcome)
	}
}

// endLocked counts the end of the chat's main turn with outcome.
func (ch *chat) endLocked(outcome string) {
	m := &ch.c.meters
	ch.outcome = outcome
	m.turns.Inc(outcome)
	if !ch.metered.IsZero() {
		m.duration.Since(ch.metered, outcome)
	}
	ch.metered, ch.parted = time.Time{}, false
}

// turnSpan starts the span of a main turn, a child of ctx's (the request
// that began it); with traces off it returns ctx and nil.
func (m *meters) turnSpan(ctx context.Context) (context.Context, trace.Span) {
	if !m.hub.Tracing() {
		return ctx, nil
	}
	return m.hub.Span(ctx, instr, "chat turn")
}

// endSpan ends a turn's span (nil when traces are off), saying its
// outcome when known.
func endSpan(span trace.Span, outcome string) {
	if span == nil {
		return
	}
	if outcome != "" {
		span.SetAttributes(attribute.String("bots.turn.outcome", outcome))
	}
	if outcome != outcomeComplete {
		span.SetStatus(codes.Error, "the turn did not complete")
	}
	span.End()
}
