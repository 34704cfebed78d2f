package bots_test

import (
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/agenthost/bots/internal/waittest"
)

// tracedChat runs one chat turn saying words through a Server whose spans
// go to an in-memory recorder, as root with token, and returns the spans
// once the turn's has ended.
func tracedChat(t *testing.T, token, words string) []sdktrace.ReadOnlySpan {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { tp.Shutdown(t.Context()) })
	srv := newServer(t)
	srv.UsersFile = filepath.Join(t.TempDir(), "users.json")
	writeFile(t, srv.UsersFile, `{"root": {"token": "`+token+`"}, "users": []}`)
	srv.Tracer = tp
	web := httptest.NewServer(srv.Handler())
	t.Cleanup(func() { web.Close(); srv.Close() })
	if got := chat(t, "ws"+strings.TrimPrefix(web.URL, "http")+"/?tkn="+token, words); !strings.Contains(got, "heard") {
		t.Fatalf("the bot answered %q", got)
	}
	var spans []sdktrace.ReadOnlySpan
	if !waittest.Within(10*time.Second, func() bool {
		spans = rec.Ended()
		return slices.ContainsFunc(spans, func(s sdktrace.ReadOnlySpan) bool { return s.Name() == "chat turn" })
	}) {
		t.Fatalf("no chat turn span ended; spans: %v", names(spans))
	}
	return spans
}

func names(spans []sdktrace.ReadOnlySpan) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name())
	}
	return out
}

// tree draws the spans under root, one per line, indented by depth,
// children in the order they began.
func tree(spans []sdktrace.ReadOnlySpan, root sdktrace.ReadOnlySpan) string {
	var b strings.Builder
	var draw func(s sdktrace.ReadOnlySpan, depth int)
	draw = func(s sdktrace.ReadOnlySpan, depth int) {
		fmt.Fprintf(&b, "%s%s\n", strings.Repeat("  ", depth), s.Name())
		var kids []sdktrace.ReadOnlySpan
		for _, c := range spans {
			if c.Parent().SpanID() == s.SpanContext().SpanID() && c.SpanContext().TraceID() == s.SpanContext().TraceID() {
				kids = append(kids, c)
			}
		}
		slices.SortFunc(kids, func(a, b sdktrace.ReadOnlySpan) int { return a.StartTime().Compare(b.StartTime()) })
		for _, c := range kids {
			draw(c, depth+1)
		}
	}
	draw(root, 0)
	return b.String()
}

func TestServerTracesAChatTurnAsOneTreeUnderItsRequest(t *testing.T) {
	t.Parallel()
	spans := tracedChat(t, "root-token-0123456789", "hello")
	var dispatch sdktrace.ReadOnlySpan
	for _, s := range spans {
		if s.Name() == "ahp dispatchAction" && tree(spans, s) != "ahp dispatchAction\n" {
			dispatch = s
		}
	}
	if dispatch == nil {
		t.Fatalf("no dispatchAction span has children; spans: %v", names(spans))
	}
	got := tree(spans, dispatch)
	t.Logf("one turn's spans:\n%s", got)
	want := "ahp dispatchAction\n  chat turn\n    store get\n    wake\n      back turn\n"
	if got != want {
		t.Errorf("the turn's tree is\n%s\nwant\n%s", got, want)
	}
	for _, s := range spans {
		if s.Name() == "ahp resourceWrite" && !slices.ContainsFunc(spans, func(c sdktrace.ReadOnlySpan) bool {
			return c.Name() == "store create" && c.Parent().SpanID() == s.SpanContext().SpanID()
		}) {
			t.Errorf("the make's request span has no store create under it:\n%s", tree(spans, s))
		}
	}
}

func TestServerSpansHoldNoMessageTokenOrInstruction(t *testing.T) {
	t.Parallel()
	const token, words = "tok-5ecret-0f-the-root", "hello private-words-of-a-person"
	spans := tracedChat(t, token, words)
	if len(spans) < 5 {
		t.Fatalf("only %d spans: %v", len(spans), names(spans))
	}
	for _, s := range spans {
		var all []string
		all = append(all, s.Name(), s.Status().Description)
		for _, a := range s.Attributes() {
			all = append(all, string(a.Key)+"="+a.Value.String())
		}
		for _, e := range s.Events() {
			all = append(all, e.Name)
			for _, a := range e.Attributes {
				all = append(all, string(a.Key)+"="+a.Value.String())
			}
		}
		for _, v := range all {
			for _, secret := range []string{token, "private-words", "Motion heard", "AGENTS.md", "<context>"} {
				if strings.Contains(v, secret) {
					t.Errorf("span %s holds %q: %s", s.Name(), secret, v)
				}
			}
		}
	}
}
