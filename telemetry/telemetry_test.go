package telemetry_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/agenthost/bots/telemetry"
)

func TestNilHubAndItsSeriesRecordNothingAndDoNotPanic(t *testing.T) {
	t.Parallel()
	var h *telemetry.Hub
	c := h.Counter("bots_x_total", "x", telemetry.Label{Name: "k", Values: []string{"a"}})
	c.Inc("a")
	c.Add(3, "b")
	h.Histogram("bots_y_seconds", "y", nil).Observe(1)
	h.Histogram("bots_y_seconds", "y", nil).Since(time.Now())
	h.GaugeFunc("bots_z", "z", func() float64 { return 1 })
	h.With("agent", "a").Gauge("bots_w", "w").Add(-1)
	ctx := context.Background()
	got, op := h.Begin(ctx, telemetry.Cell{}, "i", "n")
	op.End(nil)
	if got != ctx || h.Tracing() {
		t.Error("a nil hub changed the context or traces")
	}
	n := 0
	h.Each(func(*telemetry.Series) { n++ })
	if n != 0 {
		t.Errorf("a nil hub holds %d series", n)
	}
}

func TestALabelValueOutsideTheSetCountsAsOther(t *testing.T) {
	t.Parallel()
	h := telemetry.New(nil)
	c := h.Counter("bots_requests_total", "r",
		telemetry.Label{Name: "method", Values: []string{"ping"}},
		telemetry.Label{Name: "code", Values: []string{"ok"}})
	c.Inc("ping", "ok")
	c.Inc("ping", "ok")
	c.Inc("made-up-by-a-client", "ok")
	c.Inc("ping", "-1")
	got := map[string]float64{}
	for _, s := range c.Samples() {
		got[s.Values[0]+"/"+s.Values[1]] = s.Value
	}
	want := map[string]float64{"ping/ok": 2, "ping/other": 1, "other/ok": 1, "other/other": 0}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v (all: %v)", k, got[k], v, got)
		}
	}
	if len(got) != 4 {
		t.Errorf("%d samples, want 4: the label values are fixed", len(got))
	}
}

func TestAHistogramCountsEachValueInItsBucketCumulatively(t *testing.T) {
	t.Parallel()
	h := telemetry.New(nil)
	s := h.Histogram("bots_t_seconds", "t", []float64{0.1, 1, 10})
	for _, v := range []float64{0.05, 0.1, 0.5, 5, 50} {
		s.Observe(v)
	}
	sm := s.Samples()[0]
	if sm.Count != 5 || sm.Sum != 55.65 || !slices.Equal(sm.Buckets, []uint64{2, 3, 4}) {
		t.Errorf("count %d sum %v buckets %v, want 5, 55.65, [2 3 4] (le is inclusive)", sm.Count, sm.Sum, sm.Buckets)
	}
}

func TestASeriesMadeTwiceIsOneAndWithKeepsThemApart(t *testing.T) {
	t.Parallel()
	h := telemetry.New(nil)
	a := h.With("agent", "a").Counter("bots_agent_starts_total", "s")
	b := h.With("agent", "b").Counter("bots_agent_starts_total", "s")
	again := h.With("agent", "a").Counter("bots_agent_starts_total", "s")
	a.Inc()
	again.Inc()
	b.Inc()
	var seen []string
	h.Each(func(s *telemetry.Series) {
		seen = append(seen, s.Fixed[1])
		if v := s.Samples()[0].Value; s.Fixed[1] == "a" && v != 2 || s.Fixed[1] == "b" && v != 1 {
			t.Errorf("agent %s counted %v", s.Fixed[1], v)
		}
	})
	if !slices.Equal(seen, []string{"a", "b"}) {
		t.Errorf("series by agent: %v, want a and b once each", seen)
	}
}

func TestAGaugeReadWhenAskedSetsItsValuesByLabel(t *testing.T) {
	t.Parallel()
	h := telemetry.New(nil)
	n := 0.0
	h.GaugeRead("bots_back_sessions", "b", func(set func(float64, ...string)) {
		n++
		set(n, "idle")
		set(7, "running")
	}, telemetry.Label{Name: "state", Values: []string{"idle", "running"}})
	var g *telemetry.Series
	h.Each(func(s *telemetry.Series) { g = s })
	g.Samples()
	got := g.Samples()
	if got[0].Value != 2 || got[1].Value != 7 {
		t.Errorf("samples %+v, want idle 2 (read again), running 7", got)
	}
}

// BenchmarkCounterIncWithLabels is what a request pays to be counted.
func BenchmarkCounterIncWithLabels(b *testing.B) {
	h := telemetry.New(nil)
	c := h.Counter("bots_requests_total", "r",
		telemetry.Label{Name: "method", Values: []string{"initialize", "ping", "resourceRead", "dispatchAction"}},
		telemetry.Label{Name: "code", Values: []string{"ok", "-32602"}})
	b.ReportAllocs()
	for b.Loop() {
		c.Inc("resourceRead", "ok")
	}
}

// BenchmarkCellObserveSince is what a request pays to be counted and
// timed once its cells are looked up.
func BenchmarkCellObserveSince(b *testing.B) {
	h := telemetry.New(nil)
	c := h.Histogram("bots_request_duration_seconds", "r", nil, telemetry.Label{Name: "method", Values: []string{"resourceRead"}}).Cell("resourceRead")
	n := h.Counter("bots_requests_total", "r", telemetry.Label{Name: "method", Values: []string{"resourceRead"}}).Cell("resourceRead")
	b.ReportAllocs()
	for b.Loop() {
		began := time.Now()
		n.Inc()
		c.Since(began)
	}
}
