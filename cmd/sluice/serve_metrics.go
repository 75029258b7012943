package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
)

// metricsFlags is the flag of "sluice serve" that serves its metrics.
type metricsFlags struct {
	Addr string
}

func (mf *metricsFlags) define(fs *flag.FlagSet) {
	fs.StringVar(&mf.Addr, "metrics", "", "serve the metrics (docs/observability.md) as Prometheus text at http://ADDR/metrics (off by default; any address: metrics are not secret, but say how loaded the server is)")
}

// metricsServer is the OpenTelemetry SDK MeterProvider of "sluice serve
// -metrics", exported by the OpenTelemetry Prometheus exporter on its own
// registry (no Go runtime or process collectors: only sluice's metrics),
// and the HTTP server that serves that registry at /metrics. A nil
// *metricsServer (no -metrics) provides no MeterProvider.
type metricsServer struct {
	mp   *sdkmetric.MeterProvider
	http *http.Server
	addr net.Addr
	done chan struct{}
}

// startMetrics binds mf.Addr and serves /metrics there until stop; nil,
// nil without -metrics. An address that cannot be bound is an error naming
// the flag.
func startMetrics(mf metricsFlags) (*metricsServer, error) {
	if mf.Addr == "" {
		return nil, nil
	}
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		return nil, fmt.Errorf("-metrics %s: %w", mf.Addr, err)
	}
	l, err := net.Listen("tcp", mf.Addr)
	if err != nil {
		return nil, fmt.Errorf("-metrics %s: %w", mf.Addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	ms := &metricsServer{
		mp:   sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp)),
		addr: l.Addr(),
		done: make(chan struct{}),
		http: &http.Server{
			Handler:           mux,
			ReadHeaderTimeout: 5 * time.Second,
			ReadTimeout:       10 * time.Second,
			WriteTimeout:      30 * time.Second,
			IdleTimeout:       time.Minute,
			MaxHeaderBytes:    16 << 10,
		},
	}
	go func() {
		defer close(ms.done)
		_ = ms.http.Serve(l) // ErrServerClosed once stop closes it
	}()
	return ms, nil
}

// provider is the MeterProvider for the server and the Controller; nil
// without -metrics.
func (ms *metricsServer) provider() metric.MeterProvider {
	if ms == nil {
		return nil
	}
	return ms.mp
}

// stop closes the HTTP server (scrapes in flight are cut off: the process
// is exiting) and shuts the MeterProvider down, and waits for the serving
// goroutine.
func (ms *metricsServer) stop() {
	if ms == nil {
		return
	}
	_ = ms.http.Close()
	<-ms.done
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = ms.mp.Shutdown(ctx) // a pull exporter holds nothing to flush
}
