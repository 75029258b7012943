package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/sluicerpc/sluice/client"
	"github.com/sluicerpc/sluice/protocol"
)

// loadOptions are the flags of "sluice load".
type loadOptions struct {
	Addrs          string
	Methods        methodsFlag
	Rate           float64 // calls per second: open loop; 0 with Concurrency
	Concurrency    int     // closed loop
	MaxInflight    int
	Duration       time.Duration
	N              int
	Size           int
	Payload        string // random or compressible
	Sleep          time.Duration
	Metadata       metadataFlag
	Seed           uint64
	Timeout        time.Duration
	Progress       time.Duration
	JSON           bool
	CA, Cert, Key  string
	ServerName     string
	Auth           string
	Compression    compressionFlags
	set            map[string]bool
	progressOutput io.Writer // the progress lines (stderr)
}

// The payload kinds of -payload.
const (
	payloadRandom       = "random"
	payloadCompressible = "compressible"
)

// defaultLoadDuration is the run's length when neither -duration nor -n
// is given.
const defaultLoadDuration = 10 * time.Second

func runLoadCommand(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sluice load", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var o loadOptions
	fs.StringVar(&o.Addrs, "addr", "127.0.0.1:7878", "server endpoints, comma-separated")
	fs.Var(&o.Methods, "method", "method to call, service/method[=weight] (weight a positive integer, default 1); repeat for a weighted mix (default echo/Say)")
	fs.Float64Var(&o.Rate, "rate", 0, "open loop: start this many calls per second on schedule, whether or not earlier ones ended (bounded by -max-inflight); goes without -c")
	fs.IntVar(&o.Concurrency, "c", 0, "closed loop: this many callers, each starting its next call when its last one ended (default 1 without -rate)")
	fs.IntVar(&o.MaxInflight, "max-inflight", 1024, "with -rate: at most this many calls in flight; a call due while that many are in flight is not started and is counted as missed")
	fs.DurationVar(&o.Duration, "duration", 0, "stop starting calls after this long (default 10s when -n is not given)")
	fs.IntVar(&o.N, "n", 0, "stop after starting this many calls (with -rate: scheduling this many)")
	fs.IntVar(&o.Size, "size", 64, "request body size in bytes (echo/Sleep's body is its duration instead)")
	fs.StringVar(&o.Payload, "payload", payloadRandom, "request body content: random (seeded, incompressible) or compressible (repeated text)")
	fs.DurationVar(&o.Sleep, "sleep", 10*time.Millisecond, "how long each echo/Sleep call sleeps (0..1m)")
	fs.Var(&o.Metadata, "metadata", "request metadata key=value, sent with every call (repeatable)")
	fs.Uint64Var(&o.Seed, "seed", 1, "seed of the method mix and the random payload (the same seed makes the same choices)")
	fs.DurationVar(&o.Timeout, "timeout", 10*time.Second, "deadline of each call (sent as its time budget)")
	fs.DurationVar(&o.Progress, "progress", time.Second, "interval of the progress line (on stderr); 0 turns it off")
	fs.BoolVar(&o.JSON, "json", false, "print the results as one JSON object on stdout instead of the text report")
	fs.StringVar(&o.CA, "tls-ca", "", "CA file (PEM): speak TLS and verify the server with it")
	fs.StringVar(&o.Cert, "tls-cert", "", "client certificate file (PEM), with -tls-key")
	fs.StringVar(&o.Key, "tls-key", "", "client private key file (PEM)")
	fs.StringVar(&o.ServerName, "server-name", "", "TLS server name (default: the endpoint's host)")
	fs.StringVar(&o.Auth, "auth", "", "authentication payload for the server's authenticator")
	o.Compression.define(fs, "requests")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), `usage: sluice load [flags]

Loads a sluice server with unary calls, at a fixed rate (-rate, open loop) or
with a fixed number of callers (-c, closed loop), for -duration or -n calls.
A progress line on stderr every -progress (rewritten in place on a terminal);
at the end a latency histogram of the successful calls and a table of how
every call ended (status code and refusal reason), or with -json one JSON
object. The exit status is 0 when the load ran (refusals and errors are
results), 1 when it could not (the server cannot be reached), 2 for a bad
command line.

flags:
`)
		fs.PrintDefaults()
	}
	if code, ok := parseFlags(fs, args, stderr); !ok {
		return code
	}
	o.set = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { o.set[f.Name] = true })
	o.fillDefaults()
	if err := o.validate(); err != nil {
		printErrors(stderr, "sluice load", err)
		return exitUsage
	}
	opts, err := o.clientOptions()
	if err != nil {
		fmt.Fprintf(stderr, "sluice load: %v\n", err)
		return exitUsage
	}
	c, ok := dialAddrs(ctx, "sluice load", o.Addrs, o.Timeout, opts, stderr)
	if !ok {
		return exitFail
	}
	defer func() { _ = c.Close() }()
	o.progressOutput = stderr
	res := runLoad(ctx, o, c)
	if o.JSON {
		if err := res.writeJSON(stdout); err != nil {
			fmt.Fprintf(stderr, "sluice load: %v\n", err)
			return exitFail
		}
		return exitOK
	}
	res.print(stdout)
	return exitOK
}

// fillDefaults applies the defaults that depend on other flags: one
// caller without -rate, 10s without -n, echo/Say without -method.
func (o *loadOptions) fillDefaults() {
	if !o.set["rate"] && !o.set["c"] {
		o.Concurrency = 1
	}
	if !o.set["duration"] && !o.set["n"] {
		o.Duration = defaultLoadDuration
	}
	if len(o.Methods.list) == 0 {
		o.Methods.list = []weightedMethod{{Name: echoService + "/" + echoSay, Weight: 1}}
	}
}

// validate checks every flag and names the flag of each problem.
func (o loadOptions) validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	for _, a := range strings.Split(o.Addrs, ",") {
		if a == "" {
			bad("-addr must list endpoints separated by commas, with none empty, got %q", o.Addrs)
			break
		}
	}
	errs = append(errs, o.Methods.errs...)
	switch {
	case o.set["rate"] && o.set["c"]:
		bad("-rate (open loop) and -c (closed loop) are two ways to drive the load: give one")
	case o.set["rate"] && !(o.Rate > 0 && o.Rate <= 1e7):
		bad("-rate must be within (0, 1e7] calls per second, got %v", o.Rate)
	case o.set["c"] && (o.Concurrency < 1 || o.Concurrency > 100000):
		bad("-c must be within 1..100000, got %d", o.Concurrency)
	}
	if o.MaxInflight < 1 || o.MaxInflight > 1000000 {
		bad("-max-inflight must be within 1..1000000, got %d", o.MaxInflight)
	} else if o.set["max-inflight"] && !o.set["rate"] {
		bad("-max-inflight bounds the open loop: it needs -rate")
	}
	if o.set["duration"] && o.Duration <= 0 {
		bad("-duration must be positive, got %v", o.Duration)
	}
	if o.set["n"] && o.N < 1 {
		bad("-n must be at least 1, got %d", o.N)
	}
	if o.Size < 0 || o.Size > 64<<20 {
		bad("-size must be within 0..%d bytes, got %d", 64<<20, o.Size)
	}
	if o.Payload != payloadRandom && o.Payload != payloadCompressible {
		bad("-payload must be random or compressible, got %q", o.Payload)
	}
	if o.Sleep < 0 || o.Sleep > maxSleep {
		bad("-sleep must be within 0..%v, got %v", maxSleep, o.Sleep)
	}
	errs = append(errs, o.Metadata.errs...)
	if o.Timeout <= 0 {
		bad("-timeout must be positive, got %v", o.Timeout)
	}
	if o.Progress < 0 {
		bad("-progress must not be negative (0: no progress line), got %v", o.Progress)
	}
	errs = append(errs, clientTLSFlagErrors(o.CA, o.Cert, o.Key, o.ServerName)...)
	errs = append(errs, o.Compression.validate()...)
	return errors.Join(errs...)
}

// clientOptions builds the client's options as "sluice call" does.
func (o loadOptions) clientOptions() (client.Options, error) {
	co := callOptions{CA: o.CA, Cert: o.Cert, Key: o.Key, ServerName: o.ServerName, Auth: o.Auth, Compression: o.Compression}
	return co.clientOptions()
}

// weightedMethod is one -method: a method and its share of the calls.
type weightedMethod struct {
	Name   string
	Weight int
}

// methodsFlag collects -method flags; a bad one is kept as an error for
// validate, so that every problem is named at once.
type methodsFlag struct {
	list []weightedMethod
	errs []error
}

func (m *methodsFlag) String() string {
	if m == nil {
		return ""
	}
	parts := make([]string, len(m.list))
	for i, w := range m.list {
		parts[i] = w.Name + "=" + strconv.Itoa(w.Weight)
	}
	return strings.Join(parts, " ")
}

func (m *methodsFlag) Set(v string) error {
	name, weight, hasWeight := strings.Cut(v, "=")
	w := 1
	if hasWeight {
		n, err := strconv.Atoi(weight)
		if err != nil || n < 1 || n > 1000000 {
			m.errs = append(m.errs, fmt.Errorf("-method %q: the weight must be an integer within 1..1000000", v))
			return nil
		}
		w = n
	}
	if svc, meth, ok := strings.Cut(name, "/"); !ok || svc == "" || meth == "" || strings.Contains(meth, "/") {
		m.errs = append(m.errs, fmt.Errorf("-method must be service/method[=weight], got %q", v))
		return nil
	}
	for _, e := range m.list {
		if e.Name == name {
			m.errs = append(m.errs, fmt.Errorf("-method %s given twice: give it once, with its weight", name))
			return nil
		}
	}
	m.list = append(m.list, weightedMethod{Name: name, Weight: w})
	return nil
}

// metadataFlag collects -metadata key=value pairs.
type metadataFlag struct {
	pairs []string // key, value, key, value, ...
	errs  []error
}

func (m *metadataFlag) String() string {
	if m == nil {
		return ""
	}
	var parts []string
	for i := 0; i+1 < len(m.pairs); i += 2 {
		parts = append(parts, m.pairs[i]+"="+m.pairs[i+1])
	}
	return strings.Join(parts, " ")
}

func (m *metadataFlag) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		m.errs = append(m.errs, fmt.Errorf("-metadata must be key=value with a nonempty key, got %q", v))
		return nil
	}
	var md protocol.Metadata
	if err := md.Add(k, []byte(val)); err != nil || len(k) > protocol.MaxMetadataKeyLen {
		m.errs = append(m.errs, fmt.Errorf("-metadata %q: keys are 1..%d bytes of a-z, 0-9, '-', '_' and '.'", v, protocol.MaxMetadataKeyLen))
		return nil
	}
	m.pairs = append(m.pairs, k, val)
	return nil
}
