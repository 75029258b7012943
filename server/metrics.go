package server

import (
	"context"
	"errors"
	"runtime/debug"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/sluicerpc/sluice/protocol"
)

// The RPC metrics follow the OpenTelemetry semantic conventions for RPC,
// version SemconvVersion: rpc.server.call.duration in seconds, with
// rpc.system.name "sluice", rpc.method "service/method" ("_OTHER" for a
// method the server does not serve), rpc.response.status_code the sluice
// code name ("OK", "ResourceExhausted", ...) and, for every code but OK,
// error.type the same name. Request and response sizes, which that version
// no longer defines, keep the names and the meaning (uncompressed bytes) of
// version 1.37.0: rpc.server.request.size and rpc.server.response.size.
const (
	SemconvVersion = "1.40.0"
	semconvSchema  = "https://opentelemetry.io/schemas/" + SemconvVersion
	meterName      = "github.com/sluicerpc/sluice/server"
	rpcSystemName  = "sluice"
	otherMethod    = "_OTHER"
)

// codeCount is the number of defined status codes (0..16).
const codeCount = int(protocol.CodeUnauthenticated) + 1

// Bucket boundaries: sluice calls take microseconds to seconds, so the
// duration buckets start far below the conventions' advice (5 ms).
var (
	durationBuckets = []float64{0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10}
	sizeBuckets     = []float64{0, 64, 256, 1 << 10, 4 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 4 << 20}
)

// serverMetrics holds the instruments of a server built with a
// MeterProvider; a server without one has none (nil) and its request path
// pays one nil check. Everything here is created once in New and read
// only afterwards: recording takes no lock of ours and allocates nothing
// (the measurement options are precomputed per method and code).
type serverMetrics struct {
	duration   metric.Float64Histogram
	reqSize    metric.Int64Histogram
	respSize   metric.Int64Histogram
	queueDelay metric.Float64Histogram

	// opts[row*codeCount+code] is the attribute set of a call of the
	// method at position row (the last row is _OTHER) ending with code.
	opts [][]metric.RecordOption
	// delayOpts is indexed by queueOutcome.
	delayOpts [queueOutcomeCount][]metric.RecordOption

	reg        metric.Registration
	unregister atomic.Bool
}

// queueOutcome is how a queued call left the queue.
type queueOutcome uint8

const (
	queueGranted  queueOutcome = iota // it got its permit
	queueRefused                      // refused (queue timeout, update, stop)
	queueCanceled                     // its context ended (cancel, deadline, connection)
	queueOutcomeCount
)

var queueOutcomeNames = [queueOutcomeCount]string{"granted", "refused", "canceled"}

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

// newServerMetrics creates the instruments on mp's meter for the methods
// of s (fixed at New) and registers the observable instruments' callback.
func newServerMetrics(mp metric.MeterProvider, s *Server) (*serverMetrics, error) {
	meter := mp.Meter(meterName, metric.WithInstrumentationVersion(meterVersion(meterName)), metric.WithSchemaURL(semconvSchema))
	m := &serverMetrics{}
	var errs [4]error
	m.duration, errs[0] = meter.Float64Histogram("rpc.server.call.duration",
		metric.WithUnit("s"), metric.WithDescription("Measures the duration of inbound RPC."),
		metric.WithExplicitBucketBoundaries(durationBuckets...))
	m.reqSize, errs[1] = meter.Int64Histogram("rpc.server.request.size",
		metric.WithUnit("By"), metric.WithDescription("Measures the size of RPC request messages (uncompressed)."),
		metric.WithExplicitBucketBoundaries(sizeBuckets...))
	m.respSize, errs[2] = meter.Int64Histogram("rpc.server.response.size",
		metric.WithUnit("By"), metric.WithDescription("Measures the size of RPC response messages (uncompressed)."),
		metric.WithExplicitBucketBoundaries(sizeBuckets...))
	m.queueDelay, errs[3] = meter.Float64Histogram("sluice.admission.queue.delay",
		metric.WithUnit("s"), metric.WithDescription("Time a queued call spent in the admission queue, by how it left."),
		metric.WithExplicitBucketBoundaries(durationBuckets...))
	if err := errors.Join(errs[:]...); err != nil {
		return nil, err
	}

	names := make([]string, 0, s.nmethods+1)
	for _, svc := range s.methods {
		for _, md := range svc {
			names = append(names, md.full) // by pos
		}
	}
	names = append(names, otherMethod)
	m.opts = make([][]metric.RecordOption, len(names)*codeCount)
	for row, name := range names {
		for code := range codeCount {
			m.opts[row*codeCount+code] = []metric.RecordOption{metric.WithAttributeSet(callAttributes(name, protocol.Code(code)))}
		}
	}
	for o := range queueOutcomeCount {
		m.delayOpts[o] = []metric.RecordOption{metric.WithAttributes(attribute.String("outcome", queueOutcomeNames[o]))}
	}
	reg, err := registerServerObservers(meter, s)
	if err != nil {
		return nil, err
	}
	m.reg = reg
	return m, nil
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

// row is the attribute row of the method at pos, or of _OTHER for a nil
// method.
func (m *serverMetrics) row(md *method) int {
	if md == nil {
		return len(m.opts)/codeCount - 1
	}
	return md.pos
}

// call records a call of md (nil: a method the server does not serve)
// that began at start and ended with code; reqBytes and respBytes, when
// not negative, are its decoded request and uncompressed response body
// sizes. It allocates nothing.
func (m *serverMetrics) call(md *method, code protocol.Code, start time.Time, reqBytes, respBytes int) {
	if !code.Valid() {
		code = protocol.CodeUnknown
	}
	opts := m.opts[m.row(md)*codeCount+int(code)]
	ctx := context.Background()
	m.duration.Record(ctx, time.Since(start).Seconds(), opts...)
	if reqBytes >= 0 {
		m.reqSize.Record(ctx, int64(reqBytes), opts...)
	}
	if respBytes >= 0 {
		m.respSize.Record(ctx, int64(respBytes), opts...)
	}
}

// dequeued records the time a queued call that entered the queue at start
// spent there.
func (m *serverMetrics) dequeued(start time.Time, o queueOutcome) {
	m.queueDelay.Record(context.Background(), time.Since(start).Seconds(), m.delayOpts[o]...)
}

// now is the start time of a call: the current time with metrics, the
// zero time (and no clock read) without.
func (m *serverMetrics) now() time.Time {
	if m == nil {
		return time.Time{}
	}
	return time.Now()
}

// close unregisters the observable instruments' callback (once): a closed
// server is no longer read at collection.
func (m *serverMetrics) close() {
	if m == nil || m.unregister.Swap(true) {
		return
	}
	_ = m.reg.Unregister()
}

// methodOf is the method req names, or nil when the server has none by
// that number.
func (s *Server) methodOf(req *protocol.Request) *method {
	if int(req.Service) < len(s.methods) && int(req.Method) < len(s.methods[req.Service]) {
		return &s.methods[req.Service][req.Method]
	}
	return nil
}

// codeOf is the status a call whose handler returned err ends with, as
// handlerErrorFrame answers it.
func (cl *call) codeOf(err error) protocol.Code {
	var pe *panicError
	switch {
	case err == nil:
		return protocol.CodeOK
	case errors.As(err, &pe):
		return pe.f.Code
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return cl.contextFrame().Code
	}
	return errorFrameOf(err).Code
}

// outcomeOf is how a queued call refused with drop left the queue.
func outcomeOf(drop dropReason) queueOutcome {
	if drop == dropCanceled {
		return queueCanceled
	}
	return queueRefused
}

// observe records, with metrics, the end of cl, whose handler ran, with
// code and respBytes of response body (negative: none). It runs right
// after the answer is written, off the call's latency (recorded before
// it, the histograms' work sat between the handler and the client: 20%
// slower in BenchmarkServerUnaryMetrics); a client that got its answer
// finds the call in a collection an instant later.
func (cl *call) observe(code protocol.Code, respBytes int) {
	if m := cl.c.s.metrics; m != nil {
		reqBytes := len(cl.body)
		if cl.st != nil {
			reqBytes, respBytes = -1, -1 // a stream's sizes are per message: not recorded
		}
		m.call(cl.m, code, cl.start, reqBytes, respBytes)
	}
}
