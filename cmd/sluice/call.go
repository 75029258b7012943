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
	Data               string
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
	fs.StringVar(&o.Data, "data", "hello", "request body")
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
		fmt.Fprintf(fs.Output(), "usage: sluice call [flags]\n\nCalls a method; with -n 1 prints the answer, else a summary. The exit status is 0\nwhen every call succeeded, 1 when any was refused, canceled or failed, 2 for a\nbad command line.\n\nflags:\n")
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
	dialCtx, cancel := context.WithTimeout(ctx, o.Timeout)
	c, err := client.Dial(dialCtx, strings.Split(o.Addrs, ","), opts)
	cancel()
	if err != nil {
		fmt.Fprintf(stderr, "sluice call: -addr %s: %v\n", o.Addrs, err)
		return exitFail
	}
	defer func() { _ = c.Close() }()
	method, body := o.Method, []byte(o.Data)
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
	sum := o.load(ctx, c, method, body)
	sum.print(stdout)
	if !sum.ok() {
		return exitFail // a call was refused, canceled, failed or not made
	}
	return exitOK
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
	if (o.Cert == "") != (o.Key == "") {
		bad("-tls-cert and -tls-key go together")
	}
	if o.Cert != "" && o.CA == "" {
		bad("-tls-cert needs -tls-ca")
	}
	if o.ServerName != "" && o.CA == "" {
		bad("-server-name needs -tls-ca")
	}
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

// load makes -n calls from -c callers and sums up how they ended; it
// stops starting calls when ctx ends.
func (o callOptions) load(ctx context.Context, c *client.Client, method string, body []byte) summary {
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
				var err error
				if o.OneWay {
					err = c.OneWay(cctx, method, body)
				} else {
					_, err = c.CallRaw(cctx, method, body)
				}
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
