package client

import (
	"context"
	"errors"
	"io"
	"maps"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/protocol/status"
)

// The RPC metrics follow the OpenTelemetry semantic conventions for RPC,
// version SemconvVersion, as the server's do: rpc.client.call.duration in
// seconds, per call as the application sees it (from CallRaw, Call or
// OneWay to its return, every attempt, retry wait and dial included; a
// stream from NewStream to its end, sizes not recorded), with
// rpc.system.name "sluice", rpc.method "service/method" ("_OTHER" beyond
// maxMetricMethods distinct methods), rpc.response.status_code the code
// name the call returned ("OK", "Unavailable", ...) and, for every code but
// OK, error.type the same name. Request and response sizes, which that
// version no longer defines, keep the names and the meaning (uncompressed
// bytes) of version 1.37.0: rpc.client.request.size and
// rpc.client.response.size.
const (
	SemconvVersion = "1.40.0"
	semconvSchema  = "https://opentelemetry.io/schemas/" + SemconvVersion
	meterName      = "github.com/sluicerpc/sluice/client"
	rpcSystemName  = "sluice"
	otherMethod    = "_OTHER"

	// maxMetricMethods bounds the methods that get their own series: a
	// client's methods are not known at Dial, and a program that makes up
	// method names must not grow the cache (or the series) without bound.
	maxMetricMethods = 1024
)

// codeCount is the number of defined status codes (0..16).
const codeCount = int(protocol.CodeUnauthenticated) + 1

// Bucket boundaries: the server's (sluice calls take microseconds to
// seconds), and attempts per call up to beyond any sensible MaxAttempts.
var (
	durationBuckets = []float64{0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}
	sizeBuckets     = []float64{0, 64, 256, 1 << 10, 4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20}
	attemptBuckets  = []float64{0, 1, 2, 3, 4, 5, 10}
)

// methodRow holds the measurement options of one method, per status code.
type methodRow [codeCount][]metric.RecordOption

// clientMetrics holds the instruments of a client dialed with a
// MeterProvider; a client without one has none (nil) and its call path
// pays one nil check. The instruments are created once in Dial. The
// per-method options are a copy-on-write map: a call of a method seen
// before loads it with one atomic read and allocates nothing; the first
// call of a method builds its row under mu and publishes a new map.
type clientMetrics struct {
	duration metric.Float64Histogram
	reqSize  metric.Int64Histogram
	respSize metric.Int64Histogram
	attempts metric.Int64Histogram

	rows  atomic.Pointer[map[string]*methodRow]
	mu    sync.Mutex // serializes the additions to rows
	other *methodRow // the _OTHER row, beyond maxMetricMethods

	reg        metric.Registration
	unregister atomic.Bool
}

// meterVersion is the version of the module that holds pkg, as the
// binary's build information has it ("" when unknown, as in tests).
func meterVersion(pkg string) string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	for _, d := range bi.Deps {
		if d.Path == pkg {
			return d.Version
		}
	}
	return ""
}

// newClientMetrics creates the instruments on mp's meter and registers
// the observable instruments' callback, which reads c.
func newClientMetrics(mp metric.MeterProvider, c *Client) (*clientMetrics, error) {
	meter := mp.Meter(meterName, metric.WithInstrumentationVersion(meterVersion(meterName)), metric.WithSchemaURL(semconvSchema))
	m := &clientMetrics{}
	var errs [4]error
	m.duration, errs[0] = meter.Float64Histogram("rpc.client.call.duration",
		metric.WithUnit("s"), metric.WithDescription("Measures the duration of outbound RPC, per call as the application sees it (every attempt included)."),
		metric.WithExplicitBucketBoundaries(durationBuckets...))
	m.reqSize, errs[1] = meter.Int64Histogram("rpc.client.request.size",
		metric.WithUnit("By"), metric.WithDescription("Measures the size of RPC request messages (uncompressed)."),
		metric.WithExplicitBucketBoundaries(sizeBuckets...))
	m.respSize, errs[2] = meter.Int64Histogram("rpc.client.response.size",
		metric.WithUnit("By"), metric.WithDescription("Measures the size of RPC response messages (uncompressed)."),
		metric.WithExplicitBucketBoundaries(sizeBuckets...))
	m.attempts, errs[3] = meter.Int64Histogram("sluice.client.call.attempts",
		metric.WithUnit("{attempt}"), metric.WithDescription("Endpoint attempts per call that the endpoint policy let through (retries are this minus one)."),
		metric.WithExplicitBucketBoundaries(attemptBuckets...))
	if err := errors.Join(errs[:]...); err != nil {
		return nil, err
	}
	m.other = newMethodRow(otherMethod)
	m.rows.Store(&map[string]*methodRow{})
	reg, err := registerClientObservers(meter, c)
	if err != nil {
		return nil, err
	}
	m.reg = reg
	return m, nil
}

func newMethodRow(method string) *methodRow {
	var r methodRow
	for code := range codeCount {
		r[code] = []metric.RecordOption{metric.WithAttributeSet(callAttributes(method, protocol.Code(code)))}
	}
	return &r
}

// callAttributes is the attribute set of a call of method ending with code.
func callAttributes(method string, code protocol.Code) attribute.Set {
	kv := []attribute.KeyValue{
		attribute.String("rpc.system.name", rpcSystemName),
		attribute.String("rpc.method", method),
		attribute.String("rpc.response.status_code", code.String()),
	}
	if code != protocol.CodeOK {
		kv = append(kv, attribute.String("error.type", code.String()))
	}
	return attribute.NewSet(kv...)
}

// row is method's row: the cached one, a new one for a method not seen
// yet, or _OTHER once maxMetricMethods methods have their own.
func (m *clientMetrics) row(method string) *methodRow {
	rows := *m.rows.Load()
	if r, ok := rows[method]; ok {
		return r
	}
	if len(rows) >= maxMetricMethods {
		return m.other
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	rows = *m.rows.Load()
	if r, ok := rows[method]; ok {
		return r
	}
	if len(rows) >= maxMetricMethods {
		return m.other
	}
	r := newMethodRow(method)
	next := maps.Clone(rows)
	if next == nil {
		next = make(map[string]*methodRow, 1)
	}
	next[method] = r
	m.rows.Store(&next)
	return r
}

// call records a unary or one-way call of method that began at start and
// returned err after sent attempts; reqBytes is its request body, and
// respBytes, when not negative, its response body (uncompressed). The
// request size is recorded only when an attempt was let through. It
// allocates nothing once the method has its row (unless err is neither a
// *status.Error nor a context error: see codeOf).
func (m *clientMetrics) call(method string, start time.Time, err error, sent, reqBytes, respBytes int) {
	code := codeOf(err)
	if !code.Valid() {
		code = protocol.CodeUnknown
	}
	opts := m.row(method)[code]
	ctx := context.Background()
	m.duration.Record(ctx, time.Since(start).Seconds(), opts...)
	m.attempts.Record(ctx, int64(sent), opts...)
	if sent > 0 {
		m.reqSize.Record(ctx, int64(reqBytes), opts...)
	}
	if respBytes >= 0 {
		m.respSize.Record(ctx, int64(respBytes), opts...)
	}
}

// stream records a stream of method, begun at start, that ended with err.
// A stream's sizes are per message: not recorded, as on the server.
func (m *clientMetrics) stream(method string, start time.Time, err error) {
	code := codeOf(err)
	if !code.Valid() {
		code = protocol.CodeUnknown
	}
	m.duration.Record(context.Background(), time.Since(start).Seconds(), m.row(method)[code]...)
}

// observeEnd records, with metrics, the end of s with err (io.EOF: the
// server's End, status OK); finish calls it once, before the end is
// published, so that a caller that saw the end finds the stream in the
// next collection.
func (s *Stream) observeEnd(err error) {
	if m := s.c.metrics; m != nil {
		if errors.Is(err, io.EOF) {
			err = nil
		}
		m.stream(s.method, s.start, err)
	}
}

// now is the start time of a stream: the current time with metrics, the
// zero time (and no clock read) without.
func (m *clientMetrics) now() time.Time {
	if m == nil {
		return time.Time{}
	}
	return time.Now()
}

// codeOf is status.Code(err) without its allocation for the errors calls
// return: a *status.Error itself (never a context error), a context error
// or nil. Anything else (a wrapped status) goes through status.Code, whose
// errors.As allocates.
func codeOf(err error) protocol.Code {
	switch e := err.(type) {
	case nil:
		return protocol.CodeOK
	case *status.Error:
		return e.Code
	}
	switch err {
	case context.Canceled:
		return protocol.CodeCanceled
	case context.DeadlineExceeded:
		return protocol.CodeDeadlineExceeded
	}
	return status.Code(err)
}

// close unregisters the observable instruments' callback (once): a closed
// client is no longer read at collection.
func (m *clientMetrics) close() {
	if m == nil || m.unregister.Swap(true) {
		return
	}
	_ = m.reg.Unregister()
}

// invoke is invokeAttempts, timed and recorded when the client has
// metrics.
func (c *Client) invoke(ctx context.Context, method string, body []byte, oneWay bool, opts []CallOption) (*call, error) {
	m := c.metrics
	if m == nil {
		cl, _, err := c.invokeAttempts(ctx, method, body, oneWay, opts)
		return cl, err
	}
	start := time.Now()
	cl, sent, err := c.invokeAttempts(ctx, method, body, oneWay, opts)
	respBytes := -1
	if err == nil && !oneWay {
		respBytes = len(cl.body)
	}
	m.call(method, start, err, sent, len(body), respBytes)
	return cl, err
}
