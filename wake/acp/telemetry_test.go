package acp

import (
	"slices"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agenthost/bots/telemetry"
	"github.com/agenthost/bots/wake"
)

func TestAgentStartAndACPCallsAreSpansAndThePromptCarriesTheirTraceContext(t *testing.T) {
	t.Parallel()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	hub := telemetry.New(tp)
	h := newHarness(t, func(c *Config) { c.Telemetry = hub })
	ctx, parent := tp.Tracer("test").Start(testCtx(t), "back turn")
	opened, err := h.Open(ctx, wake.SessionInfo{URI: "ahp-session:/test", Provider: "fake", Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { opened.Close() })
	a := opened.(*agent)
	w := &fakeWork{text: "traceparent"}
	if err := a.Turn(ctx, w); err != nil {
		t.Fatal(err)
	}
	if err := a.Turn(ctx, &fakeWork{text: `tool post_message {"text": "hi"}`}); err != nil {
		t.Fatal(err)
	}
	parent.End()

	spans := rec.Ended()
	byName := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range spans { // the first of each name: the first turn's
		if old, ok := byName[s.Name()]; !ok || s.StartTime().Before(old.StartTime()) {
			byName[s.Name()] = s
		}
	}
	childOf := func(child, parent string) {
		t.Helper()
		c, p := byName[child], byName[parent]
		if c == nil || p == nil || c.Parent().SpanID() != p.SpanContext().SpanID() {
			t.Errorf("%s is not a child of %s", child, parent)
		}
	}
	childOf("agent start", "back turn")
	childOf("acp initialize", "agent start")
	childOf("acp session/new", "agent start")
	childOf("acp session/prompt", "back turn")
	childOf("mcp post_message", "back turn")
	prompt := byName["acp session/prompt"]
	if prompt == nil {
		t.Fatalf("no prompt span among %d", len(spans))
	}
	want := "traceparent: 00-" + prompt.SpanContext().TraceID().String() + "-" + prompt.SpanContext().SpanID().String() + "-01"
	if got := w.replied(); got != want {
		t.Errorf("the agent was given %q, want %q", got, want)
	}

	// The series count the start and the calls, labelled with the agent.
	var calls []string
	hub.Each(func(s *telemetry.Series) {
		for _, sm := range s.Samples() {
			if sm.Value > 0 || sm.Count > 0 {
				calls = append(calls, s.Name+"{"+strings.Join(append(slices.Clone(s.Fixed), sm.Values...), ",")+"}")
			}
		}
	})
	for _, w := range []string{
		"bots_agent_starts_total{agent,fake,ok}",
		"bots_acp_call_duration_seconds{agent,fake,initialize}",
		"bots_acp_call_duration_seconds{agent,fake,session/new}",
		"bots_acp_call_duration_seconds{agent,fake,session/prompt}",
		"bots_mcp_call_duration_seconds{agent,fake,post_message}",
	} {
		if !slices.Contains(calls, w) {
			t.Errorf("no %s among %v", w, calls)
		}
	}
}
