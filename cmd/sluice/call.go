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
	"strings"
	"sync"
	"time"

	"github.com/sluicerpc/sluice/client"
)

// callOptions are the flags of "sluice call".
type callOptions struct {
	Addrs              string
	Method             string
	Data               dataFlag
	Stream             string // a key of streamKinds
	Count              int
	Sleep              time.Duration
	N, Concurrency     int
	Timeout            time.Duration
	CA, Cert, Key      string
	ServerName, Auth   string
	Idempotent, OneWay bool
	Compression        compressionFlags

	// set names the flags given on the command line (see validate).
	set map[string]bool
}

func runCallCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sluice call", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o callOptions
	fs.StringVar(&o.Addrs, "addr", "127.0.0.1:7878", "server endpoints, comma-separated")
	fs.StringVar(&o.Method, "method", "echo/Say", "method to call, service/method")
	o.Data = dataFlag{vals: []string{"hello"}}
	fs.Var(&o.Data, "data", "request `body`; with -stream client or bidi a message, and it may be given several times (sent in order)")
	fs.StringVar(&o.Stream, "stream", "none", "open a stream of this kind: server (one message, many answers), client (many messages, one answer), bidi; none: a unary call")
	fs.IntVar(&o.Count, "count", 1, "with -stream client or bidi: send the -data messages this many times over")
	fs.DurationVar(&o.Sleep, "sleep", 0, "call echo/Sleep for this long (positive, at most 1m) instead of -method with -data; goes with neither")
	fs.IntVar(&o.N, "n", 1, "number of calls")
	fs.IntVar(&o.Concurrency, "c", 1, "concurrent callers")
	fs.DurationVar(&o.Timeout, "timeout", 10*time.Second, "deadline of each call (sent as its time budget)")
	fs.StringVar(&o.CA, "tls-ca", "", "CA file (PEM): speak TLS and verify the server with it")
	fs.StringVar(&o.Cert, "tls-cert", "", "client certificate file (PEM), with -tls-key")
	fs.StringVar(&o.Key, "tls-key", "", "client private key file (PEM)")
	fs.StringVar(&o.ServerName, "server-name", "", "TLS server name (default: the endpoint's host)")
	fs.StringVar(&o.Auth, "auth", "", "authentication payload for the server's authenticator")
	fs.BoolVar(&o.Idempotent, "idempotent", false, "mark the method idempotent: retried across endpoints on connection loss")
	fs.BoolVar(&o.OneWay, "one-way", false, "send one-way calls (no answer)")
	o.Compression.define(fs, "requests")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: sluice call [flags]\n\nCalls a method, or opens a stream with -stream; with -n 1 prints the answer (each\nmessage received, then how the stream ended), else a summary. The exit status is\n0 when every call succeeded, 1 when any was refused, canceled or failed, 2 for a\nbad command line.\n\nflags:\n")
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	o.set = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { o.set[f.Name] = true })
	if err := o.validate(); err != nil {
		printErrors(stderr, "sluice call", err)
		return exitUsage
	}
	opts, err := o.clientOptions()
	if err != nil {
		fmt.Fprintf(stderr, "sluice call: %v\n", err)
		return exitUsage
	}
	c, ok := dialAddrs(ctx, "sluice call", o.Addrs, o.Timeout, opts, stderr)
	if !ok {
		return exitFail
	}
	defer func() { _ = c.Close() }()
	if kind := streamKinds[o.Stream]; kind != 0 {
		return o.runStreams(ctx, c, kind, stdout, stderr)
	}
	method, body := o.Method, []byte(o.Data.vals[0])
	if o.Sleep > 0 {
		method, body = echoService+"/"+echoSleep, sleepBody(o.Sleep)
	}
	if o.N == 1 && !o.OneWay {
		cctx, cancel := context.WithTimeout(ctx, o.Timeout)
		defer cancel()
		resp, err := c.CallRaw(cctx, method, body)
		if err != nil {
			fmt.Fprintf(stderr, "sluice call: %v\n", err)
			return exitFail
		}
		if o.Sleep > 0 {
			fmt.Fprintf(stdout, "slept %v\n", o.Sleep)
		} else {
			fmt.Fprintf(stdout, "%s\n", resp)
		}
		return exitOK
	}
	sum := o.load(ctx, func(ctx context.Context) error {
		if o.OneWay {
			return c.OneWay(ctx, method, body)
		}
		_, err := c.CallRaw(ctx, method, body)
		return err
	})
	return sum.report(stdout)
}

// runStreams opens the -stream streams: with -n 1 one stream, printing
// each message received as a line and then how the stream ended (on
// stdout when it ended with status OK, else on stderr after the command's
// name); with -n above 1 the streams of a load, and its summary.
func (o callOptions) runStreams(ctx context.Context, c *client.Client, kind client.StreamType, stdout, stderr io.Writer) int {
	if o.N == 1 {
		sctx, cancel := context.WithTimeout(ctx, o.Timeout)
		defer cancel()
		r := o.stream(sctx, c, kind, o.Method, func(msg []byte) { fmt.Fprintf(stdout, "%s\n", msg) })
		if r.err != nil {
			r.print(stderr, "sluice call: ")
			return exitFail
		}
		r.print(stdout, "")
		return exitOK
	}
	var (
		mu       sync.Mutex
		messages streamMessages
	)
	sum := o.load(ctx, func(ctx context.Context) error {
		r := o.stream(ctx, c, kind, o.Method, nil)
		mu.Lock()
		messages.sent += r.sent
		messages.received += r.received
		mu.Unlock()
		return r.err
	})
	sum.messages = &messages
	return sum.report(stdout)
}

// validate checks every flag and names the flag of each problem; a flag
// that would be ignored is an error too.
func (o callOptions) validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	for _, a := range strings.Split(o.Addrs, ",") {
		if a == "" {
			bad("-addr must list endpoints separated by commas, with none empty, got %q", o.Addrs)
			break
		}
	}
	if svc, m, ok := strings.Cut(o.Method, "/"); !ok || svc == "" || m == "" {
		bad("-method must be service/method, got %q", o.Method)
	}
	if o.N < 1 {
		bad("-n must be at least 1, got %d", o.N)
	}
	if o.Concurrency < 1 {
		bad("-c must be at least 1, got %d", o.Concurrency)
	}
	if o.Timeout <= 0 {
		bad("-timeout must be positive, got %v", o.Timeout)
	}
	if o.set["sleep"] && (o.Sleep <= 0 || o.Sleep > maxSleep) {
		bad("-sleep must be within 1ns..%v, got %v", maxSleep, o.Sleep)
	}
	if o.set["sleep"] && (o.set["method"] || o.set["data"]) {
		bad("-sleep calls echo/Sleep: it goes with neither -method nor -data")
	}
	kind, ok := streamKinds[o.Stream]
	if !ok {
		bad("-stream must be none, server, client or bidi, got %q", o.Stream)
	}
	if kind != 0 && o.OneWay {
		bad("-stream %s opens a stream: it does not go with -one-way", o.Stream)
	}
	if kind != 0 && o.set["sleep"] {
		bad("-stream %s opens a stream: it does not go with -sleep (echo/Sleep is unary)", o.Stream)
	}
	if o.Count < 1 {
		bad("-count must be at least 1, got %d", o.Count)
	}
	if ok && !sendsMany(kind) {
		if o.set["count"] {
			bad("-count sends the -data messages several times: it needs -stream client or bidi")
		}
		if len(o.Data.vals) > 1 {
			bad("-data given %d times: only -stream client or bidi sends several messages", len(o.Data.vals))
		}
	}
	errs = append(errs, clientTLSFlagErrors(o.CA, o.Cert, o.Key, o.ServerName)...)
	errs = append(errs, o.Compression.validate()...)
	return errors.Join(errs...)
}

func (o callOptions) clientOptions() (client.Options, error) {
	opts := client.Options{Auth: []byte(o.Auth), Dialer: dialer, Compression: o.Compression.config()}
	if o.Auth == "" {
		opts.Auth = nil
	}
	if o.Idempotent {
		m := o.Method
		if o.Sleep > 0 {
			m = echoService + "/" + echoSleep
		}
		opts.IdempotentMethods = []string{m}
	}
	if o.CA == "" {
		return opts, nil
	}
	pem, err := os.ReadFile(o.CA)
	if err != nil {
		return opts, fmt.Errorf("-tls-ca: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return opts, fmt.Errorf("-tls-ca %s: no certificate found", o.CA)
	}
	opts.TLS = &tls.Config{RootCAs: pool, ServerName: o.ServerName, MinVersion: tls.VersionTLS12}
	if o.Cert != "" {
		cert, err := tls.LoadX509KeyPair(o.Cert, o.Key)
		if err != nil {
			return opts, fmt.Errorf("-tls-cert %s, -tls-key %s: %w", o.Cert, o.Key, err)
		}
		opts.TLS.Certificates = []tls.Certificate{cert}
	}
	return opts, nil
}

// load makes -n calls (each a call of do, with the -timeout deadline) from
// -c callers and sums up how they ended; it stops starting calls when ctx
// ends.
func (o callOptions) load(ctx context.Context, do func(ctx context.Context) error) summary {
	var (
		mu   sync.Mutex
		sum  = newSummary(o.N)
		next = make(chan struct{}, o.N)
		wg   sync.WaitGroup
	)
	for range o.N {
		next <- struct{}{}
	}
	close(next)
	start := time.Now()
	for range o.Concurrency {
		wg.Go(func() {
			for range next {
				if ctx.Err() != nil {
					return
				}
				cctx, cancel := context.WithTimeout(ctx, o.Timeout)
				t0 := time.Now()
				err := do(cctx)
				d := time.Since(t0)
				cancel()
				mu.Lock()
				sum.add(err, d)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	sum.elapsed = time.Since(start)
	return sum
}

// dialAddrs dials the comma-separated endpoints of -addr within timeout
// for command; a failure is said on stderr, naming the flag.
func dialAddrs(ctx context.Context, command, addrs string, timeout time.Duration, opts client.Options, stderr io.Writer) (*client.Client, bool) {
	dialCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	c, err := client.Dial(dialCtx, strings.Split(addrs, ","), opts)
	if err != nil {
		fmt.Fprintf(stderr, "%s: -addr %s: %v\n", command, addrs, err)
		return nil, false
	}
	return c, true
}

// clientTLSFlagErrors checks the TLS flags "sluice call" and "sluice load"
// share.
func clientTLSFlagErrors(ca, cert, key, serverName string) []error {
	var errs []error
	if (cert == "") != (key == "") {
		errs = append(errs, errors.New("-tls-cert and -tls-key go together"))
	}
	if cert != "" && ca == "" {
		errs = append(errs, errors.New("-tls-cert needs -tls-ca"))
	}
	if serverName != "" && ca == "" {
		errs = append(errs, errors.New("-server-name needs -tls-ca"))
	}
	return errs
}
