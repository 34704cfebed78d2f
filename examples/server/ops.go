package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/agenthost/bots/telemetry/otlp"
)

// opsHandler serves the registry at /metrics and, when profiles is set,
// the runtime profiles at /debug/pprof/ (all but cmdline, which would
// show the flags, a -db URL's password among them).
func opsHandler(reg *prometheus.Registry, profiles bool, log *slog.Logger) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn), Registry: reg,
	}))
	if profiles {
		mux.HandleFunc("GET /debug/pprof/", pprof.Index)
		mux.HandleFunc("GET /debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("GET /debug/pprof/trace", pprof.Trace)
		mux.HandleFunc("GET /debug/pprof/cmdline", http.NotFound)
	}
	return mux
}

// isLoopback reports whether the host of addr is a loopback name or
// address.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// serveOps listens on addr and serves opsHandler there until ctx is done;
// the profiles only when addr is loopback. It returns once listening: the
// address it listens on, and a function that waits for the listener to
// stop.
func serveOps(ctx context.Context, addr string, reg *prometheus.Registry, log *slog.Logger) (net.Addr, func(), error) {
	profiles := isLoopback(addr)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, nil, fmt.Errorf("-metrics-addr: %w", err)
	}
	if !profiles {
		log.Warn("serving /metrics on a non-loopback address without the profiles: /debug/pprof is served on a loopback -metrics-addr alone", "addr", ln.Addr().String())
	}
	hs := &http.Server{Handler: opsHandler(reg, profiles, log), ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics listener stopped", "err", err)
		}
	}()
	stop := context.AfterFunc(ctx, func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
	})
	log.Info("serving metrics", "addr", ln.Addr().String(), "pprof", profiles)
	return ln.Addr(), func() {
		if stop() { // ctx not done yet: shut down now
			_ = hs.Close()
		}
		<-done
	}, nil
}

// tracerFromEnv returns a tracer provider exporting over OTLP/HTTP (JSON)
// when OTEL_EXPORTER_OTLP_ENDPOINT (or its traces variant) is set,
// configured by the standard OTEL_ variables, and nil otherwise; shutdown
// flushes it.
func tracerFromEnv(ctx context.Context) (tp *sdktrace.TracerProvider, shutdown func(), err error) {
	cfg, on, err := otlp.FromEnv(os.Getenv)
	if err != nil || !on {
		return nil, func() {}, err
	}
	exp, err := otlp.New(cfg)
	if err != nil {
		return nil, nil, err
	}
	// service.name is agenthost-bots unless OTEL_SERVICE_NAME says
	// otherwise.
	res, err := resource.New(ctx, resource.WithAttributes(attribute.String("service.name", "agenthost-bots")), resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil {
		return nil, nil, fmt.Errorf("OTLP trace resource: %w", err)
	}
	tp = sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	return tp, func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = tp.Shutdown(sctx)
	}, nil
}
