package acp

import (
	"context"
	"maps"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/agenthost/bots/telemetry"
	"github.com/agenthost/bots/wake"
)

// instr names the spans of this package.
const instr = "github.com/agenthost/bots/wake/acp"

// stepLabels are the step labels of bots_agent_failures_total.
var stepLabels = map[Step]string{StepStart: "start", StepSignIn: "sign_in", StepOpen: "open", StepTurn: "turn"}

// meters are the series a harness counts into, every one labelled with
// its agent; nil series count nothing.
type meters struct {
	hub      *telemetry.Hub
	starts   *telemetry.Series // bots_agent_starts_total{agent,result}
	failures *telemetry.Series // bots_agent_failures_total{agent,step}
	calls    *telemetry.Series // bots_acp_call_duration_seconds{agent,method}
	tools    *telemetry.Series // bots_mcp_call_duration_seconds{agent,tool}
}

// newMeters makes the series of the agent provider in hub.
func newMeters(hub *telemetry.Hub, provider string) meters {
	hub = hub.With("agent", provider)
	return meters{
		hub: hub,
		starts: hub.Counter("bots_agent_starts_total", "Agent processes started for back sessions, by agent and result (ok, or failed at a step bots_agent_failures_total names).",
			telemetry.Label{Name: "result", Values: []string{"ok", "failed"}}),
		failures: hub.Counter("bots_agent_failures_total", "Agent failures, by agent and step: start, sign_in, open (the session), or turn.",
			telemetry.Label{Name: "step", Values: []string{"start", "sign_in", "open", "turn"}}),
		calls: hub.Histogram("bots_acp_call_duration_seconds", "How long ACP calls to agents took, by agent and method.", nil,
			telemetry.Label{Name: "method", Values: []string{"initialize", "session/load", "session/new", "session/prompt"}}),
		tools: hub.Histogram("bots_mcp_call_duration_seconds", "How long the MCP tool calls agents made to the server took, by agent and tool.", nil,
			telemetry.Label{Name: "tool", Values: []string{wake.PostMessage, wake.AskQuestion}}),
	}
}

// call begins ACP call method, timed and, with traces on, a span.
func (m *meters) call(ctx context.Context, method string) (context.Context, telemetry.Op) {
	return m.hub.Begin(ctx, m.calls.Cell(method), instr, "acp "+method, attribute.String("rpc.system", "acp"), attribute.String("rpc.method", method))
}

// traceMeta returns meta with the W3C trace context of ctx's span added
// (_meta.traceparent, as ACP reserves it), or meta itself when ctx has
// no span. meta is not changed.
func traceMeta(ctx context.Context, meta map[string]any) map[string]any {
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, carrier)
	if len(carrier) == 0 {
		return meta
	}
	out := maps.Clone(meta)
	if out == nil {
		out = map[string]any{}
	}
	for k, v := range carrier {
		out[k] = v
	}
	return out
}

// toolParent is ctx, an MCP request's, with the running turn's span as
// its parent when ctx carries none (the agent did not pass one on): the
// tool call is a child of the turn it serves. With traces off it is ctx.
func (a *agent) toolParent(ctx context.Context) context.Context {
	if !a.h.meters.hub.Tracing() || trace.SpanContextFromContext(ctx).IsValid() {
		return ctx
	}
	if t := a.current(); t != nil {
		if sc := trace.SpanContextFromContext(t.ctx); sc.IsValid() {
			return trace.ContextWithSpanContext(ctx, sc)
		}
	}
	return ctx
}
