// Package telemetry is what the packages that do the work report to:
// plain counters, gauges and histograms kept in atomics, and a tracer.
// It imports nothing of the project and no metrics library: a package
// below the embedding value counts into a *Hub it was given, and whoever
// wants the numbers exports them (package telemetry/prom serves them to
// Prometheus). A nil *Hub, and every nil series it hands out, records
// nothing and costs a nil check, so an embedder that wants no telemetry
// pays for none.
//
// Series are made once, when a component starts, with every label value
// they may carry fixed then (a value outside the set counts under
// "other"): no label can grow without bound, and recording is an atomic
// add with no lock and no allocation.
package telemetry

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Other is the label value of a recording whose value is not one its
// series was made with.
const Other = "other"

// Kind is what a series is.
type Kind int

// The kinds of series.
const (
	KindCounter Kind = iota
	KindGauge
	KindHistogram
)

// Hub holds the series components made and the tracer they start spans
// with. Make it with New; nil records nothing.
type Hub struct {
	tracer  trace.TracerProvider
	tracing bool     // tracer is not a no-op
	fixed   []string // label name, value pairs every series made here carries
	reg     *registry
}

// registry holds the series of a Hub and of every Hub made With it.
type registry struct {
	mu     sync.Mutex
	series []*Series
}

// New returns a Hub whose spans go to tp; nil tp starts no spans.
func New(tp trace.TracerProvider) *Hub {
	h := &Hub{tracer: tp, tracing: tp != nil, reg: &registry{}}
	if tp == nil {
		h.tracer = noop.NewTracerProvider()
	}
	return h
}

// With returns a Hub whose series all carry the label name=value besides
// their own, for a component of which there are several (one ACP agent
// among others): the same series made by each is exported as one family.
// Its series are exported with the Hub's. With on a nil Hub is nil.
func (h *Hub) With(name, value string) *Hub {
	if h == nil {
		return nil
	}
	w := *h
	w.fixed = append(slices.Clone(h.fixed), name, value)
	return &w
}

// Tracing reports whether spans are recorded: a package may then skip
// what only a span needs.
func (h *Hub) Tracing() bool { return h != nil && h.tracing }

// Tracer returns the tracer named name (the instrumenting package's import
// path); on a nil Hub it is a tracer that records nothing.
func (h *Hub) Tracer(name string) trace.Tracer {
	if h == nil {
		return noop.NewTracerProvider().Tracer(name)
	}
	return h.tracer.Tracer(name)
}

// Label is a label of a series and every value it may take.
type Label struct {
	Name   string
	Values []string
}

// Series is one metric family: a counter, gauge or histogram for each
// combination of its labels' values (and "other" of each). Its methods
// are safe for concurrent use; a nil Series records nothing.
type Series struct {
	Name    string    // e.g. bots_turns_total
	Fixed   []string  // label name, value pairs of the Hub it was made with (Hub.With)
	Help    string    // one sentence
	Kind    Kind      // counter, gauge or histogram
	Labels  []Label   // with "other" appended to each
	Buckets []float64 // a histogram's upper bounds, ascending

	fn    func() float64 // a gauge read when exported, with no labels
	read  func(set func(v float64, vals ...string))
	index []map[string]int
	cells []cell
}

// cell is one combination of label values.
type cell struct {
	n      atomic.Int64   // a counter's or gauge's value
	bucket []atomic.Int64 // a histogram's counts per bucket (not cumulative), the last one +Inf
	sum    atomic.Uint64  // a histogram's sum, as float64 bits
}

// Sample is one combination of label values of a series as it is now.
type Sample struct {
	Values  []string // in the order of the series' labels
	Value   float64  // a counter's or gauge's value
	Count   uint64   // a histogram's count
	Sum     float64  // a histogram's sum
	Buckets []uint64 // a histogram's cumulative counts, one per Buckets entry
}

// Seconds are the buckets of latencies, from 100 µs to 100 s.
var Seconds = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 100}

// Sizes are the buckets of counts, from 1 to 100,000.
var Sizes = []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 100000}

// Counter makes a counter with the given labels; nil on a nil Hub.
func (h *Hub) Counter(name, help string, labels ...Label) *Series {
	return h.add(&Series{Name: name, Help: help, Kind: KindCounter, Labels: labels})
}

// Gauge makes a gauge with the given labels; nil on a nil Hub.
func (h *Hub) Gauge(name, help string, labels ...Label) *Series {
	return h.add(&Series{Name: name, Help: help, Kind: KindGauge, Labels: labels})
}

// GaugeFunc makes a gauge with no labels whose value fn answers when the
// series is read: what is cheaper to count when asked than each time it
// changes. fn must be safe to call from any goroutine.
func (h *Hub) GaugeFunc(name, help string, fn func() float64) {
	h.add(&Series{Name: name, Help: help, Kind: KindGauge, fn: fn})
}

// GaugeRead makes a gauge with the given labels whose values read sets
// each time the series is read: a gauge by labels that is cheaper to
// count when asked than each time it changes. read must be safe to call
// from any goroutine.
func (h *Hub) GaugeRead(name, help string, read func(set func(v float64, vals ...string)), labels ...Label) {
	h.add(&Series{Name: name, Help: help, Kind: KindGauge, Labels: labels, read: read})
}

// Histogram makes a histogram with the given bucket upper bounds
// (Seconds when nil) and labels; nil on a nil Hub.
func (h *Hub) Histogram(name, help string, buckets []float64, labels ...Label) *Series {
	if buckets == nil {
		buckets = Seconds
	}
	return h.add(&Series{Name: name, Help: help, Kind: KindHistogram, Buckets: buckets, Labels: labels})
}

func (h *Hub) add(s *Series) *Series {
	if h == nil {
		return nil
	}
	n := 1
	s.Fixed = h.fixed
	s.Labels = slices.Clone(s.Labels)
	s.index = make([]map[string]int, len(s.Labels))
	for i, l := range s.Labels {
		l.Values = append(slices.Clone(l.Values), Other)
		s.Labels[i] = l
		s.index[i] = make(map[string]int, len(l.Values))
		for j, v := range l.Values {
			s.index[i][v] = j
		}
		n *= len(l.Values)
	}
	s.cells = make([]cell, n)
	if s.Kind == KindHistogram {
		for i := range s.cells {
			s.cells[i].bucket = make([]atomic.Int64, len(s.Buckets)+1)
		}
	}
	h.reg.mu.Lock()
	defer h.reg.mu.Unlock()
	// A series made again (a component made twice on one Hub) is the
	// one made first: Prometheus takes one series per name and labels.
	for i, old := range h.reg.series {
		if old.Name == s.Name && slices.Equal(old.Fixed, s.Fixed) {
			if s.fn != nil || s.read != nil {
				h.reg.series[i] = s // a gauge read when asked reads the latest component
				return s
			}
			return old
		}
	}
	h.reg.series = append(h.reg.series, s)
	return s
}

// Each calls fn with every series, in the order they were made.
func (h *Hub) Each(fn func(*Series)) {
	if h == nil {
		return
	}
	h.reg.mu.Lock()
	all := slices.Clone(h.reg.series)
	h.reg.mu.Unlock()
	for _, s := range all {
		fn(s)
	}
}

// cell returns the cell of the label values vals, one per label.
func (s *Series) cell(vals []string) *cell {
	i := 0
	for k, m := range s.index {
		j, ok := -1, false
		if k < len(vals) {
			j, ok = m[vals[k]]
		}
		if !ok {
			j = len(s.Labels[k].Values) - 1
		}
		i = i*len(s.Labels[k].Values) + j
	}
	return &s.cells[i]
}

// Inc adds one to the counter or gauge of the label values vals.
func (s *Series) Inc(vals ...string) { s.Add(1, vals...) }

// Add adds n to the counter or gauge of the label values vals (a gauge
// may go down).
func (s *Series) Add(n int64, vals ...string) {
	if s == nil {
		return
	}
	s.cell(vals).n.Add(n)
}

// Observe records v in the histogram of the label values vals.
func (s *Series) Observe(v float64, vals ...string) {
	if s == nil {
		return
	}
	s.observe(s.cell(vals), v)
}

// observe records v in the histogram's cell c.
func (s *Series) observe(c *cell, v float64) {
	i, _ := slices.BinarySearch(s.Buckets, v)
	c.bucket[i].Add(1)
	for {
		old := c.sum.Load()
		if c.sum.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+v)) {
			return
		}
	}
}

// Cell is one combination of a series' label values, looked up once:
// recording into it is an atomic add, with no map lookup. The zero Cell,
// and a Cell of a nil Series, records nothing.
type Cell struct {
	s *Series
	c *cell
}

// Cell returns the cell of the label values vals, one per label (a value
// outside the series' set is "other").
func (s *Series) Cell(vals ...string) Cell {
	if s == nil {
		return Cell{}
	}
	return Cell{s, s.cell(vals)}
}

// Inc adds one to the cell's counter or gauge.
func (c Cell) Inc() { c.Add(1) }

// Add adds n to the cell's counter or gauge.
func (c Cell) Add(n int64) {
	if c.c != nil {
		c.c.n.Add(n)
	}
}

// Observe records v in the cell's histogram.
func (c Cell) Observe(v float64) {
	if c.c != nil {
		c.s.observe(c.c, v)
	}
}

// Since records the seconds since t in the cell's histogram.
func (c Cell) Since(t time.Time) {
	if c.c != nil {
		c.s.observe(c.c, time.Since(t).Seconds())
	}
}

// On reports whether the cell records.
func (c Cell) On() bool { return c.c != nil }

// Since records the seconds since t in the histogram of the label values
// vals.
func (s *Series) Since(t time.Time, vals ...string) {
	if s == nil {
		return
	}
	s.Observe(time.Since(t).Seconds(), vals...)
}

// Samples returns every combination of the series' label values as it is
// now.
func (s *Series) Samples() []Sample {
	if s == nil {
		return nil
	}
	if s.fn != nil {
		return []Sample{{Value: s.fn()}}
	}
	if s.read != nil {
		s.read(func(v float64, vals ...string) { s.cell(vals).n.Store(int64(v)) })
	}
	out := make([]Sample, 0, len(s.cells))
	for i := range s.cells {
		c := &s.cells[i]
		sm := Sample{Values: make([]string, len(s.Labels))}
		rest := i
		for k := len(s.Labels) - 1; k >= 0; k-- {
			n := len(s.Labels[k].Values)
			sm.Values[k] = s.Labels[k].Values[rest%n]
			rest /= n
		}
		if s.Kind != KindHistogram {
			sm.Value = float64(c.n.Load())
			out = append(out, sm)
			continue
		}
		sm.Buckets = make([]uint64, len(s.Buckets))
		var total uint64
		for b := range c.bucket {
			total += uint64(c.bucket[b].Load())
			if b < len(s.Buckets) {
				sm.Buckets[b] = total
			}
		}
		sm.Count, sm.Sum = total, math.Float64frombits(c.sum.Load())
		out = append(out, sm)
	}
	return out
}

// Span starts a span named name with the hub's tracer of the package
// instr; on a nil Hub it returns ctx and a span that records nothing.
func (h *Hub) Span(ctx context.Context, instr, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	if h == nil {
		return ctx, trace.SpanFromContext(context.Background())
	}
	return h.tracer.Tracer(instr).Start(ctx, name, opts...)
}

// Op is one timed operation, begun with Hub.Begin: its latency goes to a
// histogram, and, with traces on, it is a span. The zero Op records
// nothing.
type Op struct {
	cell  Cell
	began time.Time
	span  trace.Span
}

// Begin begins an operation: its latency is recorded in the histogram
// cell (the zero Cell records none), and, with traces on, it is a span
// named name (a child of ctx's), which the returned ctx carries. It costs
// nothing when neither is on.
func (h *Hub) Begin(ctx context.Context, cell Cell, instr, name string, attrs ...attribute.KeyValue) (context.Context, Op) {
	if h == nil {
		return ctx, Op{}
	}
	op := Op{cell: cell}
	if h.tracing {
		ctx, op.span = h.tracer.Tracer(instr).Start(ctx, name, trace.WithAttributes(attrs...))
	}
	if cell.On() || op.span != nil {
		op.began = time.Now()
	}
	return ctx, op
}

// End ends the operation; a non-nil err marks its span failed, with err's
// type alone (an error's text may hold what a person wrote).
func (o Op) End(err error) {
	if o.began.IsZero() {
		return
	}
	o.cell.Since(o.began)
	if o.span != nil {
		if err != nil {
			o.span.SetStatus(codes.Error, fmt.Sprintf("%T", err))
		}
		o.span.End()
	}
}

// Families that more than one package counts into, each with a label of
// its own fixed by Hub.With: one name, one help.
const (
	LeaseTakeovers     = "bots_lease_takeovers_total"
	LeaseTakeoversHelp = "Leases this instance took that it did not hold last, by kind: main_turn (its instance stopped renewing it: the turn reads as interrupted) or back_session (the session is read back from the log)."
	LeasesHeld         = "bots_leases_held"
	LeasesHeldHelp     = "Leases this instance holds now, by kind: main_turn or back_session."
)

// StoreOps is the family of store operation latencies, by store (file,
// postgres) and operation, each store's made by Hub.With("store", name).
const (
	StoreOps     = "bots_store_operation_duration_seconds"
	StoreOpsHelp = "How long operations of the bot record store took, by store (file or postgres) and operation."
)

// StoreOperations are the operation labels of StoreOps.
var StoreOperations = []string{"get", "list", "create", "update", "delete", "gone"}

// StoreCells are a record store's StoreOps cells, one per operation.
type StoreCells struct{ Get, List, Create, Update, Delete, Gone Cell }

// StoreSeries makes the StoreOps series of the store named store in h,
// and returns its cells.
func (h *Hub) StoreSeries(store string) StoreCells {
	s := h.With("store", store).Histogram(StoreOps, StoreOpsHelp, nil, Label{Name: "operation", Values: StoreOperations})
	return StoreCells{Get: s.Cell("get"), List: s.Cell("list"), Create: s.Cell("create"), Update: s.Cell("update"), Delete: s.Cell("delete"), Gone: s.Cell("gone")}
}

// LogOps is the family of chat log operation latencies, by store (file,
// postgres) and operation, each store's made by Hub.With("store", name).
const (
	LogOps     = "bots_chatlog_operation_duration_seconds"
	LogOpsHelp = "How long operations of the chat logs (bot chats' and back sessions') took, by store (file or postgres) and operation; append_sync waits for the disk."
)

// LogOperations are the operation labels of LogOps.
var LogOperations = []string{"create", "append", "append_sync", "read", "list", "remove"}

// LogSeries makes the LogOps series of the log store named store in h.
func (h *Hub) LogSeries(store string) *Series {
	return h.With("store", store).Histogram(LogOps, LogOpsHelp, nil, Label{Name: "operation", Values: LogOperations})
}

// AppendOp is the LogOps operation of an append, synced or not.
func AppendOp(sync bool) string {
	if sync {
		return "append_sync"
	}
	return "append"
}
