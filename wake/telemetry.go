package wake

import (
	"context"

	"go.opentelemetry.io/otel/trace"
)

// instr names the spans of this package.
const instr = "github.com/agenthost/bots/wake"

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
