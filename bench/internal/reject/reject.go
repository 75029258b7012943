// Package reject measures what a server spends refusing compressed calls
// while its call capacity is full: sluice, whose governor refuses a
// request at its call reservation, before any decode, against grpc-go
// refusing the same calls from a unary interceptor (grpc-go has already
// read and decompressed the message when its interceptor runs) and from
// a tap handle (grpc.InTapHandle: before the message is read).
//
// Each server runs in a child process of its own (this executable,
// re-run with ChildEnv set), so that its CPU time is measured alone:
// getrusage(RUSAGE_SELF) in the child, user plus system, over the
// measured window, divided by the calls it refused in that window. The
// flooding client runs in the parent; its own CPU is reported beside,
// never added. The server's capacity is one call, taken by a held call
// before the flood starts, so every flooded call is refused.
package reject

import (
	"fmt"
	"time"

	"github.com/sluicerpc/sluice/bench/internal/cputime"
)

// The servers under test.
const (
	// Sluice is a sluice server with CallCapacity{PerServer: 1} and the
	// default compression configuration (zstd, gzip and br accepted).
	Sluice = "sluice"
	// GRPCInterceptor is grpc-go with gzip, refusing from a unary
	// interceptor when its one-call capacity is taken.
	GRPCInterceptor = "grpc-go-interceptor"
	// GRPCTap is grpc-go with gzip, refusing from its tap handle when the
	// capacity is taken (the interceptor still takes the capacity for the
	// calls the tap lets through).
	GRPCTap = "grpc-go-tap"
)

// Kinds lists the servers in the order they are measured.
var Kinds = []string{Sluice, GRPCInterceptor, GRPCTap}

// Result is one measured flood.
type Result struct {
	Server      string
	Payload     int // uncompressed bytes per request
	Compressed  int // compressed bytes per request body, as the client sent them
	Concurrency int
	Elapsed     time.Duration
	// Refused is the calls the server refused during the measured
	// window, counted by the server itself.
	Refused uint64
	// Decompressions is the request bodies the server decompressed
	// during the window (sluice: Stats().Decompressions; grpc-go: calls
	// of its gzip Decompress, counted by a wrapper in the child).
	Decompressions uint64
	// ServerCPU is the server process's CPU time (user plus system)
	// during the window; ClientCPU the flooding process's.
	ServerCPU, ClientCPU time.Duration
}

// ServerCPUPerCall is the server's CPU time per refused call.
func (r Result) ServerCPUPerCall() time.Duration { return perCall(r.ServerCPU, r.Refused) }

// ClientCPUPerCall is the flooding client's CPU time per refused call.
func (r Result) ClientCPUPerCall() time.Duration { return perCall(r.ClientCPU, r.Refused) }

// RefusedPerSecond is the refusal rate.
func (r Result) RefusedPerSecond() float64 { return float64(r.Refused) / r.Elapsed.Seconds() }

func perCall(d time.Duration, n uint64) time.Duration {
	if n == 0 {
		return 0
	}
	return d / time.Duration(n)
}

// A Target is one running server with its held call and a flooding
// client, ready to Measure.
type Target struct {
	kind   string
	child  *child
	holder func() // ends the held call
	flood  func(body []byte, conc int) (flooder, int, error)
}

// flooder is a running flood: Stop ends it and returns the first error
// any of its calls met other than the expected refusal.
type flooder interface{ Stop() error }

// Start starts the server kind in a child process and takes its capacity
// with one held call. Close the Target to end both.
func Start(kind string) (*Target, error) {
	c, err := startChild(kind)
	if err != nil {
		return nil, err
	}
	t := &Target{kind: kind, child: c}
	switch kind {
	case Sluice:
		t.holder, err = holdSluice(c.addr)
		t.flood = func(body []byte, conc int) (flooder, int, error) { return floodSluice(c.addr, body, conc) }
	case GRPCInterceptor, GRPCTap:
		t.holder, err = holdGRPC(c.addr)
		t.flood = func(body []byte, conc int) (flooder, int, error) { return floodGRPC(c.addr, body, conc) }
	default:
		err = fmt.Errorf("reject: unknown server %q", kind)
	}
	if err == nil {
		err = c.waitHeld()
	}
	if err != nil {
		t.Close()
		return nil, fmt.Errorf("%s: %w", kind, err)
	}
	return t, nil
}

// Close ends the held call, the child process and the clients.
func (t *Target) Close() {
	if t.holder != nil {
		t.holder()
	}
	t.child.close()
}

// Measure floods the server with conc callers sending body compressed
// (each call refused) for warmup, then for d, and returns the
// measurements of d.
func (t *Target) Measure(body []byte, conc int, warmup, d time.Duration) (Result, error) {
	r := Result{Server: t.kind, Payload: len(body), Concurrency: conc}
	f, compressed, err := t.flood(body, conc)
	if err != nil {
		return r, fmt.Errorf("%s: %w", t.kind, err)
	}
	r.Compressed = compressed
	time.Sleep(warmup)
	before, err := t.child.counters()
	if err != nil {
		_ = f.Stop()
		return r, err
	}
	client0, start := cputime.Self(), time.Now()
	time.Sleep(d)
	after, err := t.child.counters()
	r.ClientCPU, r.Elapsed = cputime.Self()-client0, time.Since(start)
	if ferr := f.Stop(); ferr != nil {
		return r, fmt.Errorf("%s: %w", t.kind, ferr)
	}
	if err != nil {
		return r, err
	}
	r.Refused = after.refused - before.refused
	r.Decompressions = after.decompressions - before.decompressions
	r.ServerCPU = after.cpu - before.cpu
	if r.Refused == 0 {
		return r, fmt.Errorf("%s: no call refused in %v", t.kind, d)
	}
	return r, nil
}
