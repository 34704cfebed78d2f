// Package prom serves a telemetry.Hub's series to Prometheus: a
// prometheus.Collector that reads them when scraped, and a registry with
// it and the Go runtime and process collectors. It is the one package of
// the module that imports the Prometheus client; what counts imports
// package telemetry alone.
package prom

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/agenthost/bots/telemetry"
)

// Registry returns a registry holding hub's series and the Go runtime and
// process collectors.
func Registry(hub *telemetry.Hub) *prometheus.Registry {
	r := prometheus.NewRegistry()
	r.MustRegister(Collector{Hub: hub}, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return r
}

// Collector collects the series of a telemetry.Hub. It is unchecked
// (Describe sends nothing): a Hub may gain series after it is registered.
type Collector struct {
	Hub *telemetry.Hub
}

// Describe sends nothing: the collector is unchecked.
func (Collector) Describe(chan<- *prometheus.Desc) {}

// Collect sends every series of the hub as it is now.
func (c Collector) Collect(ch chan<- prometheus.Metric) {
	c.Hub.Each(func(s *telemetry.Series) {
		names := make([]string, len(s.Labels))
		for i, l := range s.Labels {
			names[i] = l.Name
		}
		var fixed prometheus.Labels
		for i := 0; i+1 < len(s.Fixed); i += 2 {
			if fixed == nil {
				fixed = prometheus.Labels{}
			}
			fixed[s.Fixed[i]] = s.Fixed[i+1]
		}
		desc := prometheus.NewDesc(s.Name, s.Help, names, fixed)
		for _, sm := range s.Samples() {
			switch s.Kind {
			case telemetry.KindCounter:
				ch <- prometheus.MustNewConstMetric(desc, prometheus.CounterValue, sm.Value, sm.Values...)
			case telemetry.KindGauge:
				ch <- prometheus.MustNewConstMetric(desc, prometheus.GaugeValue, sm.Value, sm.Values...)
			case telemetry.KindHistogram:
				buckets := make(map[float64]uint64, len(s.Buckets))
				for i, b := range s.Buckets {
					buckets[b] = sm.Buckets[i]
				}
				ch <- prometheus.MustNewConstHistogram(desc, sm.Count, sm.Sum, buckets, sm.Values...)
			}
		}
	})
}
