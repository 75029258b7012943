package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/sluicerpc/sluice/kernel"
	"github.com/sluicerpc/sluice/limiters/concurrency"
	"github.com/sluicerpc/sluice/limiters/tokenbucket"
	"github.com/sluicerpc/sluice/server"
	"github.com/sluicerpc/sluice/spi"
)

// serveOptions are the flags of "sluice serve".
type serveOptions struct {
	Addr                         string
	CertFile, KeyFile, ClientCAs string
	MaxConns, MaxHandshakes      int
	CallsPerConn, CallsPerServer int
	Concurrency                  int64
	Rate                         int64
	QueueCalls                   int
	QueueDelay                   time.Duration
	StopTimeout                  time.Duration
}

func runServeCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sluice serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o serveOptions
	fs.StringVar(&o.Addr, "addr", "127.0.0.1:7878", "address to listen on")
	fs.StringVar(&o.CertFile, "tls-cert", "", "TLS certificate file (PEM); with -tls-key, the server speaks TLS")
	fs.StringVar(&o.KeyFile, "tls-key", "", "TLS private key file (PEM)")
	fs.StringVar(&o.ClientCAs, "client-ca", "", "CA file (PEM) to verify client certificates with; requires them")
	fs.IntVar(&o.MaxConns, "max-conns", 1024, "live connections")
	fs.IntVar(&o.MaxHandshakes, "max-handshakes", 64, "connections in handshake")
	fs.IntVar(&o.CallsPerConn, "calls-per-conn", 0, "active plus reserved calls per connection (0: unbounded)")
	fs.IntVar(&o.CallsPerServer, "calls-per-server", 0, "active plus reserved calls per server (0: unbounded)")
	fs.Int64Var(&o.Concurrency, "concurrency", 0, "admission: global concurrency limit (0: none)")
	fs.Int64Var(&o.Rate, "rate", 0, "admission: global token bucket, this many calls per second with a burst of as many (0: none)")
	fs.IntVar(&o.QueueCalls, "queue-calls", 0, "admission: calls that may wait for capacity (0: none wait)")
	fs.DurationVar(&o.QueueDelay, "queue-delay", 100*time.Millisecond, "admission: how long a call may wait")
	fs.DurationVar(&o.StopTimeout, "stop-timeout", 10*time.Second, "on SIGINT or SIGTERM, how long calls in flight may take before the server closes (a second signal closes at once; exit status 1 when the drain did not complete)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: sluice serve [flags]\n\nServes the echo service (echo/Say, echo/Sleep) until interrupted.\n\nflags:\n")
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	srv, admission, err := o.build()
	if err != nil {
		fmt.Fprintf(stderr, "sluice serve: %v\n", err)
		return exitUsage
	}
	l, err := listen(o.Addr)
	if err != nil {
		fmt.Fprintf(stderr, "sluice serve: %v\n", err)
		return exitFail
	}
	fmt.Fprintf(stdout, "sluice serve: listening on %s (tls=%v, admission=%s)\n", l.Addr(), o.CertFile != "", admission)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(l) }()
	select {
	case err := <-done:
		fmt.Fprintf(stderr, "sluice serve: %v\n", err)
		return exitFail
	case <-ctx.Done():
	}
	// Graceful and bounded: calls in flight get -stop-timeout; a second
	// signal closes at once. Either way the exit status says whether the
	// drain completed.
	stopCtx, cancel := context.WithTimeout(context.Background(), o.StopTimeout)
	defer cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- srv.Stop(stopCtx) }()
	var stopErr error
	select {
	case stopErr = <-stopped:
	case <-forceStop:
		cancel() // Stop closes everything and returns at once
		stopErr = fmt.Errorf("interrupted again: closed at once: %w", <-stopped)
	}
	<-done
	st := srv.Stats()
	if stopErr != nil {
		fmt.Fprintf(stderr, "sluice serve: stop: %v (calls in flight were cut off)\n", stopErr)
		fmt.Fprintf(stdout, "sluice serve: stopped after %d calls (%d refused), drain incomplete\n", st.Calls, sum(st.Refusals))
		return exitFail
	}
	fmt.Fprintf(stdout, "sluice serve: stopped after %d calls (%d refused)\n", st.Calls, sum(st.Refusals))
	return exitOK
}

func sum(m map[string]uint64) uint64 {
	var n uint64
	for _, v := range m {
		n += v
	}
	return n
}

// build makes the server and enables the admission the flags ask for; it
// returns a description of the admission.
func (o serveOptions) build() (*server.Server, string, error) {
	so := server.Options{
		Connections: server.ConnectionLimits{MaxConnections: o.MaxConns, MaxHandshakes: o.MaxHandshakes},
		Calls:       server.CallCapacity{PerConnection: o.CallsPerConn, PerServer: o.CallsPerServer},
	}
	if (o.CertFile == "") != (o.KeyFile == "") {
		return nil, "", errors.New("-tls-cert and -tls-key go together")
	}
	if o.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(o.CertFile, o.KeyFile)
		if err != nil {
			return nil, "", err
		}
		so.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		if o.ClientCAs != "" {
			pem, err := os.ReadFile(o.ClientCAs)
			if err != nil {
				return nil, "", err
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, "", fmt.Errorf("-client-ca %s: no certificate found", o.ClientCAs)
			}
			so.TLS.ClientCAs, so.TLS.ClientAuth = pool, tls.RequireAndVerifyClientCert
		}
	} else if o.ClientCAs != "" {
		return nil, "", errors.New("-client-ca needs -tls-cert and -tls-key")
	}
	var limits []spi.Spec
	if o.Concurrency > 0 {
		limits = append(limits, concurrency.Spec(o.Concurrency))
	}
	if o.Rate > 0 {
		limits = append(limits, tokenbucket.Spec(o.Rate, o.Rate, time.Second))
	}
	if len(limits) == 0 {
		if o.QueueCalls > 0 {
			return nil, "", errors.New("-queue-calls needs -concurrency or -rate")
		}
		srv, err := server.New(echoMux(nil), so)
		return srv, "disabled", err
	}
	ko := kernel.Options{Global: kernel.Rule{Limits: limits}}
	if o.QueueCalls > 0 {
		ko.Queue = kernel.QueuePolicy{MaxQueuedCalls: o.QueueCalls, MaxQueuedBytes: int64(o.QueueCalls) << 20, MaxQueueDelay: o.QueueDelay}
	}
	so.Admission = &ko // in force before the first connection
	srv, err := server.New(echoMux(nil), so)
	if err != nil {
		return nil, "", err
	}
	return srv, fmt.Sprintf("concurrency=%d rate=%d/s queue=%d", o.Concurrency, o.Rate, o.QueueCalls), nil
}
