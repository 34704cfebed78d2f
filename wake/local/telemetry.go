package local

import (
	"context"
	"maps"
	"slices"
	"strings"

	"github.com/oklog/ulid/v2"
	"go.opentelemetry.io/otel/trace"

	"github.com/agenthost/bots/telemetry"
)

// The states of a back session, as bots_back_sessions counts them.
const (
	stateRunning = "running" // a turn runs on its agent
	stateIdle    = "idle"    // its agent is open and waits for a message
	stateClosed  = "closed"  // restored, or its agent not opened yet
	stateCopy    = "copy"    // another host runs it; this one follows its log
)

// newHostMeters makes the series of the back sessions h runs.
func newHostMeters(hub *telemetry.Hub, h *Host) {
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

// instr names the spans of the back sessions: the wake's, as they were
// before Host had a package of its own.
const instr = "github.com/agenthost/bots/wake"

// traced is ctx carrying the span context sc when it is valid.
func traced(ctx context.Context, sc trace.SpanContext) context.Context {
	if !sc.IsValid() {
		return ctx
	}
	return trace.ContextWithSpanContext(ctx, sc)
}

// newID is a new id for a session or a part: a ULID in lower case.
func newID() string { return strings.ToLower(ulid.Make().String()) }
