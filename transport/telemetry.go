package transport

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/agenthost/bots/telemetry"
)

// instr names the spans and series of this package.
const instr = "github.com/agenthost/bots/transport"

// codeOK is the code label of a request answered with a result.
const codeOK = "ok"

// codeLabels are the code labels of the JSON-RPC errors the server
// answers with, by number: a fixed set, so that no client can grow it.
var codeLabels = func() map[int]string {
	m := map[int]string{}
	for _, c := range []int{CodeParseError, CodeInvalidRequest, CodeMethodNotFound, CodeInvalidParams, CodeInternalError,
		CodeSessionNotFound, CodeSessionAlreadyExists, CodeUnsupportedProtocol, CodeAuthRequired, CodeNotFound,
		CodePermissionDenied, CodeAlreadyExists, CodeConflict} {
		m[c] = strconv.Itoa(c)
	}
	return m
}()

// methodNames are the method labels: every method the server serves.
func methodNames() []string {
	names := []string{"initialize", "ping", "reconnect", "subscribe", "unsubscribe", "dispatchAction"}
	names = append(names, slices.Sorted(maps.Keys(resourceMethods))...)
	return append(names, slices.Sorted(maps.Keys(hostMethods))...)
}

// meters are the series the server counts into; nil series count
// nothing.
type meters struct {
	hub      *telemetry.Hub
	tracing  bool
	conns    *telemetry.Series // bots_connections_total{result}
	requests *telemetry.Series // bots_requests_total{method,code}
	latency  *telemetry.Series // bots_request_duration_seconds{method}
	// methods are each method's cells, looked up once per request; a
	// method not served is other's.
	methods map[string]*methodCells
	other   *methodCells
}

// methodCells are one method's cells: answered ok, and its latency.
type methodCells struct {
	ok, latency telemetry.Cell
}

// newMeters makes the server's series in hub (none when hub is nil).
func newMeters(hub *telemetry.Hub, s *Server) meters {
	methods := telemetry.Label{Name: "method", Values: methodNames()}
	codes := telemetry.Label{Name: "code", Values: append([]string{codeOK}, slices.Sorted(maps.Values(codeLabels))...)}
	m := meters{
		hub:     hub,
		tracing: hub.Tracing(),
		conns: hub.Counter("bots_connections_total", "WebSocket connections asked for, by result: accepted, unauthenticated (refused at the upgrade) or revoked (the token was withdrawn).",
			telemetry.Label{Name: "result", Values: []string{"accepted", "unauthenticated", "revoked"}}),
		requests: hub.Counter("bots_requests_total", "AHP requests and notifications handled, by method and code (ok, or the JSON-RPC error code answered).", methods, codes),
		latency:  hub.Histogram("bots_request_duration_seconds", "How long AHP requests took to answer, by method, from the frame read to the answer queued.", nil, methods),
	}
	if m.requests != nil {
		m.methods = map[string]*methodCells{}
		for _, name := range append(methods.Values, telemetry.Other) {
			m.methods[name] = &methodCells{ok: m.requests.Cell(name, codeOK), latency: m.latency.Cell(name)}
		}
		m.other = m.methods[telemetry.Other]
	}
	hub.GaugeFunc("bots_connections_open", "WebSocket and in-process connections open now.", func() float64 {
		s.mu.Lock()
		defer s.mu.Unlock()
		return float64(len(s.conns))
	})
	return m
}

// begin starts measuring request (or notification) m on c: it answers when it began (zero
// when nothing is measured), and sets c.rctx, the context the request is
// served with, to hold its span when traces are on.
func (c *conn) begin(m *message) time.Time {
	c.code = 0
	c.rctx = c.ctx
	mt := &c.srv.meters
	if mt.requests == nil && !mt.tracing {
		return time.Time{}
	}
	if mt.tracing {
		c.rctx, c.span = mt.hub.Span(c.ctx, instr, "ahp "+methodLabel(m.Method), trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(attribute.String("rpc.system", "jsonrpc"), attribute.String("rpc.method", methodLabel(m.Method))))
	}
	return time.Now()
}

// end records request m, begun at began, as answered with c.code.
func (c *conn) end(m *message, began time.Time) {
	if began.IsZero() {
		return
	}
	code := codeOK
	if c.code != 0 {
		code = codeLabels[c.code]
		if code == "" {
			code = telemetry.Other
		}
	}
	mt := &c.srv.meters
	if mt.methods != nil {
		mc := mt.methods[m.Method]
		if mc == nil {
			mc = mt.other
		}
		if c.code == 0 {
			mc.ok.Inc()
		} else {
			mt.requests.Inc(m.Method, code)
		}
		mc.latency.Since(began)
	}
	if c.span != nil {
		if c.code != 0 {
			c.span.SetStatus(codes.Error, "json-rpc error "+code)
		}
		c.span.SetAttributes(attribute.String("rpc.jsonrpc.code", code))
		c.span.End()
		c.span = nil
	}
	c.rctx = c.ctx
}

// methodLabel is method when the server serves it, else "other": a span
// name, like a label, must not grow with what clients send.
func methodLabel(method string) string {
	switch {
	case method == "initialize", method == "ping", method == "reconnect", method == "subscribe",
		method == "unsubscribe", method == "dispatchAction", resourceMethods[method], hostMethods[method]:
		return method
	}
	return telemetry.Other
}

// requestCtx is the context a request is served with: the connection's,
// carrying the request's span when traces are on.
func (c *conn) requestCtx() context.Context {
	if c.rctx != nil {
		return c.rctx
	}
	return c.ctx
}
