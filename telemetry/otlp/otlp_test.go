package otlp_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/agenthost/bots/telemetry/otlp"
)

// collector is a stand-in OTLP/HTTP receiver keeping what it was sent.
type collector struct {
	mu      sync.Mutex
	bodies  []map[string]any
	headers []http.Header
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	data, _ := io.ReadAll(r.Body)
	if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/json" || json.Unmarshal(data, &body) != nil {
		http.Error(w, "bad request", http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	c.bodies = append(c.bodies, body)
	c.headers = append(c.headers, r.Header.Clone())
	c.mu.Unlock()
	w.Write([]byte("{}"))
}

func TestExporterSendsSpansAsOTLPJSONWithTheirTreeAndHeaders(t *testing.T) {
	t.Parallel()
	col := &collector{}
	srv := httptest.NewServer(col)
	defer srv.Close()
	env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL + "/", "OTEL_EXPORTER_OTLP_HEADERS": "x-api-key=k%3D1, x-team=bots"}
	cfg, ok, err := otlp.FromEnv(func(k string) string { return env[k] })
	if err != nil || !ok {
		t.Fatalf("FromEnv: %v %v", ok, err)
	}
	exp, err := otlp.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "agenthost-bots"))))
	ctx, parent := tp.Tracer("github.com/agenthost/bots/bot").Start(context.Background(), "chat turn")
	_, child := tp.Tracer("github.com/agenthost/bots/wake").Start(ctx, "wake")
	child.SetAttributes(attribute.Int("n", 3), attribute.Bool("b", true))
	child.SetStatus(codes.Error, "*acp.StepError")
	child.End()
	parent.End()
	if err := tp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}

	col.mu.Lock()
	defer col.mu.Unlock()
	if len(col.bodies) != 2 {
		t.Fatalf("%d requests, want one per span (a syncer)", len(col.bodies))
	}
	if h := col.headers[0]; h.Get("X-Api-Key") != "k=1" || h.Get("X-Team") != "bots" {
		t.Errorf("headers %v", h)
	}
	type kv struct {
		Key   string
		Value map[string]any
	}
	type body struct {
		ResourceSpans []struct {
			Resource   struct{ Attributes []kv }
			ScopeSpans []struct {
				Scope struct{ Name string }
				Spans []struct {
					TraceID, SpanID, ParentSpanID, Name string
					StartTimeUnixNano, EndTimeUnixNano  string
					Attributes                          []kv
					Status                              struct {
						Code    int
						Message string
					}
				}
			}
		}
	}
	for i, b := range col.bodies {
		var got body
		data, _ := json.Marshal(b)
		if err := json.Unmarshal(data, &got); err != nil {
			t.Fatal(err)
		}
		rs := got.ResourceSpans[0]
		if rs.Resource.Attributes[0].Key != "service.name" || rs.Resource.Attributes[0].Value["stringValue"] != "agenthost-bots" {
			t.Errorf("resource %+v", rs.Resource)
		}
		sp := rs.ScopeSpans[0].Spans[0]
		switch i {
		case 0: // the child ends first
			if sp.Name != "wake" || rs.ScopeSpans[0].Scope.Name != "github.com/agenthost/bots/wake" || sp.Status.Code != 2 || sp.Status.Message != "*acp.StepError" {
				t.Errorf("child %s", data)
			}
			if len(sp.Attributes) != 2 || sp.Attributes[0].Value["intValue"] != "3" || sp.Attributes[1].Value["boolValue"] != true {
				t.Errorf("child attributes %s", data)
			}
			if len(sp.TraceID) != 32 || len(sp.SpanID) != 16 || sp.ParentSpanID != parent.SpanContext().SpanID().String() || sp.StartTimeUnixNano > sp.EndTimeUnixNano {
				t.Errorf("child ids and times %s", data)
			}
		case 1:
			if sp.Name != "chat turn" || sp.ParentSpanID != "" || sp.TraceID != parent.SpanContext().TraceID().String() || sp.Status.Code != 0 {
				t.Errorf("parent %s", data)
			}
		}
	}
}

func TestFromEnvIsOffWithoutAnEndpointAndRefusesWhatItCannotSpeak(t *testing.T) {
	t.Parallel()
	if _, ok, err := otlp.FromEnv(func(string) string { return "" }); ok || err != nil {
		t.Errorf("no endpoint: %v %v, want off", ok, err)
	}
	for _, env := range []map[string]string{
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "localhost:4318"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_TIMEOUT": "soon"},
		{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_HEADERS": "authorization"},
	} {
		if _, _, err := otlp.FromEnv(func(k string) string { return env[k] }); err == nil {
			t.Errorf("%v was taken", env)
		}
	}
	env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://ignored:1", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://c/custom", "OTEL_EXPORTER_OTLP_TIMEOUT": "2500"}
	cfg, ok, err := otlp.FromEnv(func(k string) string { return env[k] })
	if !ok || err != nil || cfg.URL != "https://c/custom" || cfg.Timeout.Milliseconds() != 2500 {
		t.Errorf("traces endpoint: %+v %v %v", cfg, ok, err)
	}
}

func TestParseHeadersNeverSaysAHeadersValue(t *testing.T) {
	t.Parallel()
	_, err := otlp.ParseHeaders("good=1,bad pair=s3cr3t-value")
	if err == nil || strings.Contains(err.Error(), "s3cr3t") {
		t.Errorf("error %v", err)
	}
}

func FuzzParseHeaders(f *testing.F) {
	for _, s := range []string{"", "a=b", "a=b,c=d", "x-api-key=k%3D1, x-team=bots", "=", "a", "a=%zz", ",,,"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		h, err := otlp.ParseHeaders(s)
		if err != nil {
			if h != nil {
				t.Errorf("%q: headers and an error", s)
			}
			return
		}
		for k := range h {
			if k == "" || strings.ContainsAny(k, " \t\r\n:=,") {
				t.Errorf("%q: header name %q", s, k)
			}
		}
	})
}
