// Package otlp exports spans over OTLP/HTTP in its JSON encoding: a
// span exporter for the OpenTelemetry SDK that POSTs to a collector's
// /v1/traces, configured by the standard OTEL_EXPORTER_OTLP_ variables.
// It speaks http/json alone so that the server links neither protobuf nor
// gRPC for traces that are off by default (the OpenTelemetry OTLP/HTTP
// exporter links both).
package otlp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Config is where and how spans are sent.
type Config struct {
	// URL is the collector's traces endpoint, e.g.
	// http://localhost:4318/v1/traces. Required.
	URL string
	// Headers are sent with every request (an API key of a hosted
	// collector, for one); they are never logged.
	Headers map[string]string
	// Timeout bounds one export; zero is 10 s.
	Timeout time.Duration
	// Client sends the requests; nil is a client of its own.
	Client *http.Client
}

// FromEnv reads a Config from the environment as the OpenTelemetry
// specification names it: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (the URL as
// it is) or OTEL_EXPORTER_OTLP_ENDPOINT (with /v1/traces appended), their
// _HEADERS (name=value pairs, comma-separated, URL-encoded) and _TIMEOUT
// (milliseconds). ok is false when neither endpoint is set: no traces. A
// protocol other than http/json (OTEL_EXPORTER_OTLP_PROTOCOL) is an
// error, as is a value that does not parse; an error never holds a
// header's value.
func FromEnv(getenv func(string) string) (cfg Config, ok bool, err error) {
	either := func(name string) string {
		if v := getenv("OTEL_EXPORTER_OTLP_TRACES_" + name); v != "" {
			return v
		}
		return getenv("OTEL_EXPORTER_OTLP_" + name)
	}
	switch {
	case getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != "":
		cfg.URL = getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
	case getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "":
		cfg.URL = strings.TrimSuffix(getenv("OTEL_EXPORTER_OTLP_ENDPOINT"), "/") + "/v1/traces"
	default:
		return Config{}, false, nil
	}
	if u, err := url.Parse(cfg.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return Config{}, false, fmt.Errorf("otlp: the traces endpoint %q is not an http:// or https:// URL", cfg.URL)
	}
	if p := either("PROTOCOL"); p != "" && p != "http/json" {
		return Config{}, false, fmt.Errorf("otlp: OTEL_EXPORTER_OTLP_PROTOCOL is %q: this server exports traces as OTLP/HTTP JSON alone; set it to http/json or leave it unset (collectors take JSON on /v1/traces)", p)
	}
	if cfg.Headers, err = ParseHeaders(either("HEADERS")); err != nil {
		return Config{}, false, err
	}
	if t := either("TIMEOUT"); t != "" {
		ms, err := strconv.Atoi(t)
		if err != nil || ms <= 0 {
			return Config{}, false, fmt.Errorf("otlp: OTEL_EXPORTER_OTLP_TIMEOUT is %q, not a positive number of milliseconds", t)
		}
		cfg.Timeout = time.Duration(ms) * time.Millisecond
	}
	return cfg, true, nil
}

// ParseHeaders reads name=value pairs separated by commas, each part
// URL-encoded, as OTEL_EXPORTER_OTLP_HEADERS holds them. An error names
// the pair by its position, never its value.
func ParseHeaders(s string) (map[string]string, error) {
	out := map[string]string{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	for i, pair := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(pair, "=")
		name, err1 := url.PathUnescape(strings.TrimSpace(k))
		value, err2 := url.PathUnescape(strings.TrimSpace(v))
		if !ok || name == "" || err1 != nil || err2 != nil || !validHeaderName(name) {
			return nil, fmt.Errorf("otlp: OTEL_EXPORTER_OTLP_HEADERS: pair %d is not name=value with a header name", i+1)
		}
		out[name] = value
	}
	return out, nil
}

// validHeaderName reports whether s is an HTTP header name (RFC 9110
// token).
func validHeaderName(s string) bool {
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', strings.ContainsRune("!#$%&'*+-.^_`|~", r):
		default:
			return false
		}
	}
	return s != ""
}

// Exporter sends spans to a collector. Make it with New.
type Exporter struct {
	cfg Config

	mu     sync.Mutex
	closed bool
}

var _ sdktrace.SpanExporter = (*Exporter)(nil)

// New returns an exporter for cfg.
func New(cfg Config) (*Exporter, error) {
	if cfg.URL == "" {
		return nil, errors.New("otlp: no traces endpoint")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.Client == nil {
		cfg.Client = &http.Client{}
	}
	return &Exporter{cfg: cfg}, nil
}

// ExportSpans sends spans in one request.
func (e *Exporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	e.mu.Lock()
	closed := e.closed
	e.mu.Unlock()
	if closed || len(spans) == 0 {
		return nil
	}
	body, err := json.Marshal(encode(spans))
	if err != nil {
		return fmt.Errorf("otlp: encode spans: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, e.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("otlp: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range e.cfg.Headers {
		req.Header.Set(k, v)
	}
	resp, err := e.cfg.Client.Do(req)
	if err != nil {
		return fmt.Errorf("otlp: export to %s: %w", e.cfg.URL, err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("otlp: export to %s: %s", e.cfg.URL, resp.Status)
	}
	return nil
}

// Shutdown stops the exporter: later exports send nothing.
func (e *Exporter) Shutdown(context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.closed = true
	return nil
}

// The OTLP JSON encoding (opentelemetry-proto's JSON mapping: ids in
// lower-case hex, 64-bit integers as decimal strings, enums as numbers).
type (
	request struct {
		ResourceSpans []resourceSpans `json:"resourceSpans"`
	}
	resourceSpans struct {
		Resource   resource     `json:"resource"`
		ScopeSpans []scopeSpans `json:"scopeSpans"`
		SchemaURL  string       `json:"schemaUrl,omitempty"`
	}
	resource struct {
		Attributes []keyValue `json:"attributes"`
	}
	scopeSpans struct {
		Scope scope  `json:"scope"`
		Spans []span `json:"spans"`
	}
	scope struct {
		Name    string `json:"name"`
		Version string `json:"version,omitempty"`
	}
	span struct {
		TraceID           string     `json:"traceId"`
		SpanID            string     `json:"spanId"`
		TraceState        string     `json:"traceState,omitempty"`
		ParentSpanID      string     `json:"parentSpanId,omitempty"`
		Name              string     `json:"name"`
		Kind              int        `json:"kind"`
		StartTimeUnixNano string     `json:"startTimeUnixNano"`
		EndTimeUnixNano   string     `json:"endTimeUnixNano"`
		Attributes        []keyValue `json:"attributes,omitempty"`
		Events            []event    `json:"events,omitempty"`
		Status            status     `json:"status"`
	}
	event struct {
		TimeUnixNano string     `json:"timeUnixNano"`
		Name         string     `json:"name"`
		Attributes   []keyValue `json:"attributes,omitempty"`
	}
	status struct {
		Code    int    `json:"code,omitempty"`
		Message string `json:"message,omitempty"`
	}
	keyValue struct {
		Key   string `json:"key"`
		Value value  `json:"value"`
	}
	value struct {
		String *string     `json:"stringValue,omitempty"`
		Bool   *bool       `json:"boolValue,omitempty"`
		Int    *string     `json:"intValue,omitempty"`
		Double *float64    `json:"doubleValue,omitempty"`
		Array  *arrayValue `json:"arrayValue,omitempty"`
	}
	arrayValue struct {
		Values []value `json:"values"`
	}
)

// encode groups spans by resource and scope, in the order they come.
func encode(spans []sdktrace.ReadOnlySpan) request {
	var req request
	resIndex := map[attribute.Distinct]int{}
	scopeIndex := map[[2]int]int{} // resource index, scope key → scope index
	scopeKeys := map[string]int{}
	for _, s := range spans {
		res := s.Resource()
		rk := res.Equivalent()
		ri, ok := resIndex[rk]
		if !ok {
			ri = len(req.ResourceSpans)
			resIndex[rk] = ri
			req.ResourceSpans = append(req.ResourceSpans, resourceSpans{Resource: resource{Attributes: keyValues(res.Attributes())}, SchemaURL: res.SchemaURL()})
		}
		sc := s.InstrumentationScope()
		sk, ok := scopeKeys[sc.Name+"\x00"+sc.Version]
		if !ok {
			sk = len(scopeKeys)
			scopeKeys[sc.Name+"\x00"+sc.Version] = sk
		}
		si, ok := scopeIndex[[2]int{ri, sk}]
		if !ok {
			si = len(req.ResourceSpans[ri].ScopeSpans)
			scopeIndex[[2]int{ri, sk}] = si
			req.ResourceSpans[ri].ScopeSpans = append(req.ResourceSpans[ri].ScopeSpans, scopeSpans{Scope: scope{Name: sc.Name, Version: sc.Version}})
		}
		ss := &req.ResourceSpans[ri].ScopeSpans[si]
		ss.Spans = append(ss.Spans, encodeSpan(s))
	}
	return req
}

func encodeSpan(s sdktrace.ReadOnlySpan) span {
	sc := s.SpanContext()
	out := span{
		TraceID:           sc.TraceID().String(),
		SpanID:            sc.SpanID().String(),
		TraceState:        sc.TraceState().String(),
		Name:              s.Name(),
		Kind:              int(s.SpanKind()), // the SDK's numbers are OTLP's
		StartTimeUnixNano: strconv.FormatInt(s.StartTime().UnixNano(), 10),
		EndTimeUnixNano:   strconv.FormatInt(s.EndTime().UnixNano(), 10),
		Attributes:        keyValues(s.Attributes()),
	}
	if p := s.Parent(); p.IsValid() {
		out.ParentSpanID = p.SpanID().String()
	}
	for _, e := range s.Events() {
		out.Events = append(out.Events, event{TimeUnixNano: strconv.FormatInt(e.Time.UnixNano(), 10), Name: e.Name, Attributes: keyValues(e.Attributes)})
	}
	switch st := s.Status(); st.Code {
	case codes.Ok:
		out.Status = status{Code: 1}
	case codes.Error:
		out.Status = status{Code: 2, Message: st.Description}
	}
	return out
}

func keyValues(attrs []attribute.KeyValue) []keyValue {
	out := make([]keyValue, 0, len(attrs))
	for _, a := range attrs {
		out = append(out, keyValue{Key: string(a.Key), Value: encodeValue(a.Value)})
	}
	return out
}

func encodeValue(v attribute.Value) value {
	switch v.Type() {
	case attribute.BOOL:
		b := v.AsBool()
		return value{Bool: &b}
	case attribute.INT64:
		i := strconv.FormatInt(v.AsInt64(), 10)
		return value{Int: &i}
	case attribute.FLOAT64:
		f := v.AsFloat64()
		return value{Double: &f}
	case attribute.BOOLSLICE:
		return arrayOf(v.AsBoolSlice(), attribute.BoolValue)
	case attribute.INT64SLICE:
		return arrayOf(v.AsInt64Slice(), attribute.Int64Value)
	case attribute.FLOAT64SLICE:
		return arrayOf(v.AsFloat64Slice(), attribute.Float64Value)
	case attribute.STRINGSLICE:
		return arrayOf(v.AsStringSlice(), attribute.StringValue)
	}
	s := v.String()
	return value{String: &s}
}

// arrayOf encodes a slice attribute as an OTLP array of its values.
func arrayOf[T any](xs []T, of func(T) attribute.Value) value {
	vs := make([]value, 0, len(xs))
	for _, x := range xs {
		vs = append(vs, encodeValue(of(x)))
	}
	return value{Array: &arrayValue{Values: vs}}
}
