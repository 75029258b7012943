package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/sluicerpc/sluice/kernel"
	"github.com/sluicerpc/sluice/limiters/concurrency"
	"github.com/sluicerpc/sluice/limiters/tokenbucket"
	"github.com/sluicerpc/sluice/server"
	"github.com/sluicerpc/sluice/spi"
	"go.opentelemetry.io/otel/metric"
)

func runServeCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sluice serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o serveOptions
	serveFlags(fs, &o)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: sluice serve [flags]\n\nServes the echo service (echo/Say, echo/Sleep, and the streams echo/Repeat,\necho/Collect, echo/Chat) until interrupted.\n\nflags:\n")
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	o.noteSet(fs)
	if err := o.validate(); err != nil {
		printErrors(stderr, "sluice serve", err)
		return exitUsage
	}
	// The metrics address is bound first: one that cannot be bound stops
	// the command before anything else starts.
	ms, err := startMetrics(o.Control.Metrics)
	if err != nil {
		fmt.Fprintf(stderr, "sluice serve: %v\n", err)
		return exitFail
	}
	defer ms.stop()
	logger := serveLogger(stderr)
	srv, admission, err := o.build(ms.provider(), logger)
	if err != nil {
		printErrors(stderr, "sluice serve", err)
		return exitUsage
	}
	// The configuration sources start before the listener: the file's
	// configuration is in force for the first connection.
	cp, err := startControl(ctx, srv, o.Control, ms.provider(), logger, stdout)
	if err != nil {
		printErrors(stderr, "sluice serve", err)
		_ = srv.Close()
		return exitFail
	}
	defer cp.stop()
	if o.Control.any() {
		admission = "from the configuration"
		if cur := cp.ctl.Current(); cur.Document != nil {
			admission = fmt.Sprintf("%s, generation %d", cur.Source, cur.Generation)
		}
	}
	l, err := listen(o.Addr)
	if err != nil {
		fmt.Fprintf(stderr, "sluice serve: %v\n", err)
		return exitFail
	}
	// The bounds in force, defaults included, then the line that says
	// the server is up.
	cl := srv.ConnectionLimits()
	handshakes := cl.MaxHandshakes
	if handshakes == 0 { // the server's "bounded by MaxConnections"
		handshakes = cl.MaxConnections
	}
	cc := srv.CallCapacity()
	fmt.Fprintf(stdout, "sluice serve: max-conns=%d max-handshakes=%d max-handshakes-per-address=%d handshake-timeout=%v keepalive=%s idle-timeout=%s write-timeout=%s max-frame-size=%d max-frame-memory=%d calls-per-conn=%d calls-per-server=%d\n",
		cl.MaxConnections, handshakes, cl.MaxHandshakesPerAddress, o.HandshakeTimeout, describeOff(o.Keepalive), describeOff(o.IdleTimeout),
		describeOff(o.WriteTimeout), o.MaxFrameSize, o.frameMemory(), cc.PerConnection, cc.PerServer)
	gl := srv.GovernorLimits()
	fmt.Fprintf(stdout, "sluice serve: codecs=%s compress-min-size=%d max-decoded-size=%d decode-ratio=%d decode-floor=%d max-decodes=%d max-retained-bytes=%d max-decoded-bytes=%d\n",
		o.Compression.Codecs, o.Compression.MinSize, o.Compression.MaxDecodedSize, o.Compression.DecodeRatio, o.Compression.DecodeFloor,
		gl.Decodes, gl.RetainedBytes, gl.DecodedBytes)
	if ms != nil {
		fmt.Fprintf(stdout, "sluice serve: metrics at http://%s/metrics\n", ms.addr)
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
		if errors.Is(stopErr, context.DeadlineExceeded) {
			stopErr = fmt.Errorf("-stop-timeout %v passed: %w", o.StopTimeout, stopErr)
		}
	case <-forceStop:
		cancel() // Stop closes everything and returns at once
		stopErr = fmt.Errorf("interrupted again: closed at once: %w", <-stopped)
	}
	<-done
	cp.stop()
	st := srv.Stats()
	if stopErr != nil {
		fmt.Fprintf(stderr, "sluice serve: stop: %v (calls in flight were cut off)\n", stopErr)
		fmt.Fprintf(stdout, "sluice serve: stopped after %d calls (%s), drain incomplete\n", st.Calls, describeRefusals(st))
		printDecodes(stdout, st)
		return exitFail
	}
	fmt.Fprintf(stdout, "sluice serve: stopped after %d calls (%s)\n", st.Calls, describeRefusals(st))
	printDecodes(stdout, st)
	return exitOK
}

// describeRefusals says how many calls the server answered without
// running them, by reason, and apart from them how many ended because
// their caller gave up first (Cancel, the deadline, or the connection,
// while queued): "3 refused: concurrency=2 queue_full=1, 1 canceled".
func describeRefusals(st server.Stats) string {
	var refused uint64
	var reasons []string
	for _, k := range sortedKeys(st.Refusals) {
		refused += st.Refusals[k]
		reasons = append(reasons, fmt.Sprintf("%s=%d", k, st.Refusals[k]))
	}
	out := fmt.Sprintf("%d refused", refused)
	if len(reasons) > 0 {
		out += ": " + strings.Join(reasons, " ")
	}
	return out + fmt.Sprintf(", %d canceled", st.EndedWhileQueued)
}

// build makes the server of validated flags and enables the admission
// they ask for; it returns a description of the admission. Its errors name
// the flag whose file could not be used.
func (o serveOptions) build(mp metric.MeterProvider, logger *slog.Logger) (*server.Server, string, error) {
	so := o.serverOptions()
	so.Logger = logger
	so.MeterProvider = mp // nil without -metrics
	if o.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(o.CertFile, o.KeyFile)
		if err != nil {
			return nil, "", fmt.Errorf("-tls-cert %s, -tls-key %s: %w", o.CertFile, o.KeyFile, err)
		}
		so.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		if o.ClientCAs != "" {
			pem, err := os.ReadFile(o.ClientCAs)
			if err != nil {
				return nil, "", fmt.Errorf("-client-ca: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, "", fmt.Errorf("-client-ca %s: no certificate found", o.ClientCAs)
			}
			so.TLS.ClientCAs, so.TLS.ClientAuth = pool, tls.RequireAndVerifyClientCert
		}
	}
	var limits []spi.Spec
	if o.Concurrency > 0 {
		limits = append(limits, concurrency.Spec(o.Concurrency))
	}
	if o.Rate > 0 {
		limits = append(limits, tokenbucket.Spec(o.Rate, o.Rate, time.Second))
	}
	if len(limits) == 0 {
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

// printErrors prints each line of err after the command's name.
func printErrors(w io.Writer, command string, err error) {
	for _, line := range strings.Split(err.Error(), "\n") {
		fmt.Fprintf(w, "%s: %s\n", command, line)
	}
}

// printDecodes prints what compressed traffic cost, when there was any.
func printDecodes(w io.Writer, st server.Stats) {
	if st.Decompressions == 0 && st.CompressedResponses == 0 && st.CompressedStreamMessages == 0 {
		return
	}
	fmt.Fprintf(w, "sluice serve: decompressions=%d decoded-bytes=%d decode-failures=%d compressed-responses=%d compressed-stream-messages=%d\n",
		st.Decompressions, st.DecodedBytes, st.DecodeFailures, st.CompressedResponses, st.CompressedStreamMessages)
}

// serveLogger is the logger of the server and the configuration sources:
// text lines on stderr, Info and above.
func serveLogger(stderr io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(stderr, nil))
}
