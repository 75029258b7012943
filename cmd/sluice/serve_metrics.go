package main

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/sluicerpc/sluice/control/admin"
)

// metricsFlags is the flag of "sluice serve" that serves its metrics.
type metricsFlags struct {
	Addr      string
	TokenFile string
}

func (mf *metricsFlags) define(fs *flag.FlagSet) {
	fs.StringVar(&mf.Addr, "metrics", "", "serve the metrics (docs/observability.md) as Prometheus text at http://ADDR/metrics (off by default; any address: metrics are not secret, but say how loaded the server is)")
	fs.StringVar(&mf.TokenFile, "metrics-token-file", "", "with -metrics: scrapes must send Authorization: Bearer <the file's first line> (at least 16 bytes); none by default")
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
		if mf.TokenFile != "" {
			return nil, errors.New("-metrics-token-file needs -metrics")
		}
		return nil, nil
	}
	var token []byte
	if mf.TokenFile != "" {
		tok, err := admin.ReadToken(mf.TokenFile)
		if err != nil {
			return nil, fmt.Errorf("-metrics-token-file: %w", err)
		}
		token = tok
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
	// One client cannot take every connection of the port.
	l = admin.LimitListener(l, admin.DefaultMaxConns, admin.DefaultMaxConnsPerAddress)
	mux := http.NewServeMux()
	var metrics http.Handler = promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
	if token != nil {
		metrics = bearerOnly(token, metrics)
	}
	mux.Handle("GET /metrics", metrics)
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

// bearerOnly wraps next so that a request without Authorization: Bearer
// <token> gets 401, its body unread and its connection closed after the
// answer. The comparison is of SHA-256 digests, in constant time.
func bearerOnly(token []byte, next http.Handler) http.Handler {
	want := sha256.Sum256(token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scheme, tok, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		got := sha256.Sum256([]byte(strings.TrimSpace(tok)))
		if strings.EqualFold(scheme, "Bearer") && subtle.ConstantTimeCompare(got[:], want[:]) == 1 {
			next.ServeHTTP(w, r)
			return
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="sluice-metrics"`)
		w.Header().Set("Connection", "close")
		_ = http.NewResponseController(w).SetReadDeadline(time.Now())
		http.Error(w, "authorization required: Authorization: Bearer <the -metrics-token-file token>", http.StatusUnauthorized)
	})
}
