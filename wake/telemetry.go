package wake

import (
	"context"
	"maps"
	"slices"

	"go.opentelemetry.io/otel/trace"

	"github.com/agenthost/bots/telemetry"
)

// instr names the spans of this package.
const instr = "github.com/agenthost/bots/wake"

// The states of a back session, as bots_back_sessions counts them.
const (
	stateRunning = "running" // a turn runs on its agent
	stateIdle    = "idle"    // its agent is open and waits for a message
	stateClosed  = "closed"  // restored, or its agent not opened yet
	stateCopy    = "copy"    // another host runs it; this one follows its log
)

// WakeContext is Wake with the span ctx carries (the main turn's) as the
// parent of the wake's own; nothing else of ctx is kept: the turn
// outlives the request that began it.
func (w *Waker) WakeContext(ctx context.Context, m Message, main Main) *Turn {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		m.parent = sc
	}
	return w.Wake(m, main)
}

// traced is ctx carrying the span context sc when it is valid.
func traced(ctx context.Context, sc trace.SpanContext) context.Context {
	if !sc.IsValid() {
		return ctx
	}
	return trace.ContextWithSpanContext(ctx, sc)
}

// newHostMeters makes the series of the back sessions h runs.
func newHostMeters(hub *telemetry.Hub, h *LocalHost) {
	agents := telemetry.Label{Name: "agent", Values: slices.Sorted(maps.Keys(h.harnesses))}
	states := telemetry.Label{Name: "state", Values: []string{stateRunning, stateIdle, stateClosed, stateCopy}}
	hub.GaugeRead("bots_back_sessions", "Back sessions this host holds, by agent and state: running a turn, idle (agent open), closed (agent not opened since the restart) or copy (another instance runs it).", func(set func(v float64, vals ...string)) {
		counts := map[[2]string]int{}
		h.mu.Lock()
		all := slices.Collect(maps.Values(h.sessions))
		h.mu.Unlock()
		for _, s := range all {
			s.Lock()
			state := stateClosed
			switch {
			case !s.here && s.h.shared:
				state = stateCopy
			case s.turn != nil:
				state = stateRunning
			case s.agent != nil:
				state = stateIdle
			}
			s.Unlock()
			counts[[2]string{s.info.Provider, state}]++
		}
		for _, a := range agents.Values {
			for _, st := range states.Values {
				set(float64(counts[[2]string{a, st}]), a, st)
			}
		}
	}, agents, states)
}
