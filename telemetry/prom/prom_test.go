package prom_test

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/agenthost/bots/telemetry"
	"github.com/agenthost/bots/telemetry/prom"
)

func TestCollectorExportsTheHubsSeriesByTheConventions(t *testing.T) {
	t.Parallel()
	h := telemetry.New(nil)
	turns := h.Counter("bots_turns_total", "Main chat turns ended, by outcome.", telemetry.Label{Name: "outcome", Values: []string{"complete", "error"}})
	lat := h.With("store", "file").Histogram("bots_store_operation_duration_seconds", "Store latency.", []float64{0.001, 0.01}, telemetry.Label{Name: "operation", Values: []string{"get"}})
	h.With("store", "postgres").Histogram("bots_store_operation_duration_seconds", "Store latency.", []float64{0.001, 0.01}, telemetry.Label{Name: "operation", Values: []string{"get"}})
	turns.Inc("complete")
	turns.Inc("error")
	turns.Inc("error")
	lat.Observe(0.005, "get")
	c := prom.Collector{Hub: h}
	want := `
# HELP bots_turns_total Main chat turns ended, by outcome.
# TYPE bots_turns_total counter
bots_turns_total{outcome="complete"} 1
bots_turns_total{outcome="error"} 2
bots_turns_total{outcome="other"} 0
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "bots_turns_total"); err != nil {
		t.Error(err)
	}
	want = `
# HELP bots_store_operation_duration_seconds Store latency.
# TYPE bots_store_operation_duration_seconds histogram
bots_store_operation_duration_seconds_bucket{operation="get",store="file",le="0.001"} 0
bots_store_operation_duration_seconds_bucket{operation="get",store="file",le="0.01"} 1
bots_store_operation_duration_seconds_bucket{operation="get",store="file",le="+Inf"} 1
bots_store_operation_duration_seconds_sum{operation="get",store="file"} 0.005
bots_store_operation_duration_seconds_count{operation="get",store="file"} 1
bots_store_operation_duration_seconds_bucket{operation="other",store="file",le="0.001"} 0
bots_store_operation_duration_seconds_bucket{operation="other",store="file",le="0.01"} 0
bots_store_operation_duration_seconds_bucket{operation="other",store="file",le="+Inf"} 0
bots_store_operation_duration_seconds_sum{operation="other",store="file"} 0
bots_store_operation_duration_seconds_count{operation="other",store="file"} 0
bots_store_operation_duration_seconds_bucket{operation="get",store="postgres",le="0.001"} 0
bots_store_operation_duration_seconds_bucket{operation="get",store="postgres",le="0.01"} 0
bots_store_operation_duration_seconds_bucket{operation="get",store="postgres",le="+Inf"} 0
bots_store_operation_duration_seconds_sum{operation="get",store="postgres"} 0
bots_store_operation_duration_seconds_count{operation="get",store="postgres"} 0
bots_store_operation_duration_seconds_bucket{operation="other",store="postgres",le="0.001"} 0
bots_store_operation_duration_seconds_bucket{operation="other",store="postgres",le="0.01"} 0
bots_store_operation_duration_seconds_bucket{operation="other",store="postgres",le="+Inf"} 0
bots_store_operation_duration_seconds_sum{operation="other",store="postgres"} 0
bots_store_operation_duration_seconds_count{operation="other",store="postgres"} 0
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "bots_store_operation_duration_seconds"); err != nil {
		t.Error(err)
	}
	problems, err := testutil.CollectAndLint(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}

func TestRegistryGathersTheRuntimeAndProcessCollectors(t *testing.T) {
	t.Parallel()
	fams, err := prom.Registry(telemetry.New(nil)).Gather()
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, f := range fams {
		have[f.GetName()] = true
	}
	for _, name := range []string{"go_goroutines", "go_gc_duration_seconds", "process_cpu_seconds_total", "process_resident_memory_bytes"} {
		if !have[name] {
			t.Errorf("no %s", name)
		}
	}
}
