package server

import (
	"context"
	"errors"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/sluicerpc/sluice/kernel"
)

// serverObservers are sluice's own metrics: observable instruments read
// from Stats at collection time, so they cost the request path nothing.
// One callback reads one Stats snapshot per collection and reports every
// instrument from it.
type serverObservers struct {
	granted, queued, abandoned, started, refused metric.Int64ObservableCounter
	admissionRefused                             metric.Int64ObservableCounter
	queueCalls, queueBytes                       metric.Int64ObservableGauge
	active, limit, waiters                       metric.Int64ObservableGauge
	generation, enabled, programs                metric.Int64ObservableGauge
	connAdmitted, connRefused, connFailed        metric.Int64ObservableCounter
	connLive, connHandshaking                    metric.Int64ObservableGauge
	callsHeld, callsCapacity                     metric.Int64ObservableGauge
	decodesUsed, decodesLimit                    metric.Int64ObservableGauge
	budgetUsed, budgetLimit                      metric.Int64ObservableGauge
	decodes, decodeFailures                      metric.Int64ObservableCounter
	codecBytes, compressedMessages               metric.Int64ObservableCounter
	frameMemory                                  metric.Int64ObservableGauge
	panics, readLoopPanics, streamStalls         metric.Int64ObservableCounter
	acceptErrors                                 metric.Int64ObservableCounter
}

// registerServerObservers creates sluice's observable instruments on
// meter and registers the callback that reads s.Stats for them.
func registerServerObservers(meter metric.Meter, s *Server) (metric.Registration, error) {
	var o serverObservers
	var errs []error
	counter := func(dst *metric.Int64ObservableCounter, name, unit, desc string) {
		var err error
		*dst, err = meter.Int64ObservableCounter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
	}
	gauge := func(dst *metric.Int64ObservableGauge, name, unit, desc string) {
		var err error
		*dst, err = meter.Int64ObservableGauge(name, metric.WithUnit(unit), metric.WithDescription(desc))
		errs = append(errs, err)
	}
	counter(&o.granted, "sluice.admission.granted", "{call}", "Calls admission let through (at once or from the queue; every call while admission is disabled).")
	counter(&o.queued, "sluice.admission.queued", "{call}", "Calls that entered the admission queue.")
	counter(&o.abandoned, "sluice.admission.queue.abandoned", "{call}", "Queued calls whose context ended (cancel, deadline, connection) before a decision: not refusals.")
	counter(&o.started, "sluice.server.calls.started", "{call}", "Calls handed to their own goroutine (queued or admitted).")
	counter(&o.refused, "sluice.server.calls.refused", "{call}", "Calls refused without running their handler, by reason.")
	counter(&o.admissionRefused, "sluice.admission.refused", "{call}", "Calls admission refused, by the scope that refused them (a state such as global/concurrency, or a partition namespace for its capacity and its partitions' limits) and reason.")
	gauge(&o.queueCalls, "sluice.admission.queue.calls", "{call}", "Calls waiting in the admission queue.")
	gauge(&o.queueBytes, "sluice.admission.queue.bytes", "By", "Request bytes held by the calls waiting in the admission queue.")
	gauge(&o.active, "sluice.admission.active", "{permit}", "Units in use per admission scope (holders of a concurrency limit, tokens taken of a rate).")
	gauge(&o.limit, "sluice.admission.limit", "{permit}", "Limit per admission scope.")
	gauge(&o.waiters, "sluice.admission.waiters", "{call}", "Calls queued on each admission scope.")
	gauge(&o.generation, "sluice.admission.generation", "{generation}", "The admission kernel's current generation.")
	gauge(&o.enabled, "sluice.admission.enabled", "1", "1 when admission is enabled, 0 when disabled.")
	gauge(&o.programs, "sluice.admission.programs", "{program}", "Admission programs not yet drained: the current one and retired ones still held.")
	counter(&o.connAdmitted, "sluice.server.connections.admitted", "{connection}", "Connections admitted at accept.")
	counter(&o.connRefused, "sluice.server.connections.refused", "{connection}", "Connections refused at accept, by reason.")
	counter(&o.connFailed, "sluice.server.connections.failed", "{connection}", "Connections closed for a failure, by reason.")
	gauge(&o.connLive, "sluice.server.connections.live", "{connection}", "Live connections (handshaking included).")
	gauge(&o.connHandshaking, "sluice.server.connections.handshaking", "{connection}", "Connections still in their handshake.")
	gauge(&o.callsHeld, "sluice.server.calls.reservations", "{call}", "Server call capacity held, by state (active, reserved).")
	gauge(&o.callsCapacity, "sluice.server.calls.capacity", "{call}", "The server's call capacity (active + reserved <= capacity).")
	gauge(&o.decodesUsed, "sluice.governor.decodes.used", "{decode}", "Decodes of compressed requests running.")
	gauge(&o.decodesLimit, "sluice.governor.decodes.limit", "{decode}", "The governor's bound on decodes running at once.")
	gauge(&o.budgetUsed, "sluice.governor.bytes.used", "By", "Bytes held per governor budget (retained, decoded, stream).")
	gauge(&o.budgetLimit, "sluice.governor.bytes.limit", "By", "The governor's bound per byte budget (retained, decoded, stream).")
	counter(&o.decodes, "sluice.codec.decodes", "{decode}", "Decodes of compressed requests started.")
	counter(&o.decodeFailures, "sluice.codec.decode.failures", "{decode}", "Decodes of compressed requests that failed.")
	counter(&o.codecBytes, "sluice.codec.bytes", "By", "Bytes through the codecs, by direction (in, out) and form (compressed, decoded).")
	counter(&o.compressedMessages, "sluice.codec.compressed", "{message}", "Messages sent compressed, by kind (response, stream_message).")
	gauge(&o.frameMemory, "sluice.server.frame_memory", "By", "Bytes held for large request frames (bounded by MaxFrameMemory).")
	counter(&o.panics, "sluice.server.handler.panics", "{panic}", "Handler panics recovered.")
	counter(&o.readLoopPanics, "sluice.server.read_loop.panics", "{panic}", "Connections ended by a panic while one of their frames was handled (a bug; the process goes on).")
	counter(&o.streamStalls, "sluice.server.streams.stalled", "{stream}", "Streams ended because a Send waited StreamStallTimeout for the client's window.")
	counter(&o.acceptErrors, "sluice.server.accept.errors", "{error}", "Accept failures the server backed off from and retried (out of file descriptors, say).")
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return meter.RegisterCallback(func(_ context.Context, ob metric.Observer) error {
		o.observe(ob, s.Stats())
		return nil
	}, o.instruments()...)
}

func (o *serverObservers) instruments() []metric.Observable {
	return []metric.Observable{
		o.granted, o.queued, o.abandoned, o.started, o.refused, o.admissionRefused, o.queueCalls, o.queueBytes,
		o.active, o.limit, o.waiters, o.generation, o.enabled, o.programs,
		o.connAdmitted, o.connRefused, o.connFailed, o.connLive, o.connHandshaking,
		o.callsHeld, o.callsCapacity, o.decodesUsed, o.decodesLimit, o.budgetUsed, o.budgetLimit,
		o.decodes, o.decodeFailures, o.codecBytes, o.compressedMessages, o.frameMemory, o.panics, o.readLoopPanics, o.streamStalls, o.acceptErrors,
	}
}

func attr(k, v string) metric.ObserveOption {
	return metric.WithAttributes(attribute.String(k, v))
}

func u64(v uint64) int64 { return int64(min(v, 1<<63-1)) }

// observe reports st; it runs at collection time only.
func (o *serverObservers) observe(ob metric.Observer, st Stats) {
	ob.ObserveInt64(o.granted, u64(st.AdmissionGranted))
	ob.ObserveInt64(o.queued, u64(st.AdmissionQueued))
	ob.ObserveInt64(o.abandoned, u64(st.EndedWhileQueued))
	ob.ObserveInt64(o.started, u64(st.Calls))
	for reason, n := range st.Refusals {
		ob.ObserveInt64(o.refused, u64(n), attr("reason", reason))
	}
	a := st.Admission
	ob.ObserveInt64(o.queueCalls, int64(a.QueuedCalls))
	ob.ObserveInt64(o.queueBytes, a.QueuedBytes)
	for _, sc := range a.Scopes {
		scope := attr("scope", sc.Name)
		ob.ObserveInt64(o.active, sc.InUse, scope)
		ob.ObserveInt64(o.limit, sc.Limit, scope)
		ob.ObserveInt64(o.waiters, int64(sc.Waiters), scope)
	}
	o.observeAdmissionRefusals(ob, a)
	ob.ObserveInt64(o.generation, u64(a.Generation))
	enabled, retired := int64(0), a.LivePrograms
	if a.Enabled {
		enabled, retired = 1, max(0, a.LivePrograms-1)
	}
	ob.ObserveInt64(o.enabled, enabled)
	ob.ObserveInt64(o.programs, a.LivePrograms-retired, attr("state", "current"))
	ob.ObserveInt64(o.programs, retired, attr("state", "retired"))

	ob.ObserveInt64(o.connAdmitted, u64(st.ConnectionsAdmitted))
	ob.ObserveInt64(o.connRefused, u64(st.RefusedConnectionLimit), attr("reason", "connection_limit"))
	ob.ObserveInt64(o.connRefused, u64(st.RefusedHandshakeLimit), attr("reason", "handshake_limit"))
	ob.ObserveInt64(o.connRefused, u64(st.RefusedHandshakePerAddress), attr("reason", "handshake_per_address"))
	ob.ObserveInt64(o.connFailed, u64(st.HandshakeFailures), attr("reason", "handshake"))
	ob.ObserveInt64(o.connFailed, u64(st.AuthenticationFailures), attr("reason", "authentication"))
	ob.ObserveInt64(o.connFailed, u64(st.ProtocolViolations), attr("reason", "protocol_violation"))
	ob.ObserveInt64(o.connFailed, u64(st.WriteTimeouts), attr("reason", "write_timeout"))
	ob.ObserveInt64(o.connFailed, u64(st.FrameMemoryRefusals), attr("reason", "frame_memory"))
	ob.ObserveInt64(o.connLive, int64(st.Connections))
	ob.ObserveInt64(o.connHandshaking, int64(st.Handshakes))

	ob.ObserveInt64(o.callsHeld, int64(st.ServerCalls.Active), attr("state", "active"))
	ob.ObserveInt64(o.callsHeld, int64(st.ServerCalls.Reserved), attr("state", "reserved"))
	ob.ObserveInt64(o.callsCapacity, int64(st.ServerCalls.Capacity))

	g := st.Governor
	ob.ObserveInt64(o.decodesUsed, g.Decodes.Used)
	ob.ObserveInt64(o.decodesLimit, g.Decodes.Limit)
	for _, b := range [...]struct {
		name        string
		used, limit int64
	}{{"retained", g.Retained.Used, g.Retained.Limit}, {"decoded", g.Decoded.Used, g.Decoded.Limit}, {"stream", g.Stream.Used, g.Stream.Limit}} {
		ob.ObserveInt64(o.budgetUsed, b.used, attr("budget", b.name))
		ob.ObserveInt64(o.budgetLimit, b.limit, attr("budget", b.name))
	}
	ob.ObserveInt64(o.decodes, u64(st.Decompressions))
	ob.ObserveInt64(o.decodeFailures, u64(st.DecodeFailures))
	dirForm := func(dir, form string) metric.ObserveOption {
		return metric.WithAttributes(attribute.String("direction", dir), attribute.String("form", form))
	}
	ob.ObserveInt64(o.codecBytes, u64(st.CompressedBytesIn), dirForm("in", "compressed"))
	ob.ObserveInt64(o.codecBytes, u64(st.DecodedBytes), dirForm("in", "decoded"))
	ob.ObserveInt64(o.codecBytes, u64(st.CompressedBytesOut), dirForm("out", "compressed"))
	ob.ObserveInt64(o.codecBytes, u64(st.UncompressedBytesOut), dirForm("out", "decoded"))
	ob.ObserveInt64(o.compressedMessages, u64(st.CompressedResponses), attr("kind", "response"))
	ob.ObserveInt64(o.compressedMessages, u64(st.CompressedStreamMessages), attr("kind", "stream_message"))
	ob.ObserveInt64(o.frameMemory, st.FrameMemory)
	ob.ObserveInt64(o.panics, u64(st.HandlerPanics))
	ob.ObserveInt64(o.readLoopPanics, u64(st.ReadLoopPanics))
	ob.ObserveInt64(o.streamStalls, u64(st.StreamStalls))
	ob.ObserveInt64(o.acceptErrors, u64(st.AcceptErrors))
}

// observeAdmissionRefusals reports the kernel's refusals by scope and
// reason, summed over the states of one scope name (a scope whose limiter
// was replaced has a state per lineage until the old one drains).
func (o *serverObservers) observeAdmissionRefusals(ob metric.Observer, a kernel.Stats) {
	type key struct{ scope, reason string }
	sum := map[key]uint64{}
	for _, sc := range a.Scopes {
		for reason, n := range sc.Refusals {
			sum[key{sc.Name, reason}] += n
		}
	}
	for _, ps := range a.Partitions {
		for reason, n := range ps.Refusals {
			sum[key{ps.Name, reason}] += n
		}
	}
	for k, n := range sum {
		ob.ObserveInt64(o.admissionRefused, u64(n), metric.WithAttributes(attribute.String("scope", k.scope), attribute.String("reason", k.reason)))
	}
}
