package server

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/sluicerpc/sluice/kernel"
	"github.com/sluicerpc/sluice/kernel/governor"
	"github.com/sluicerpc/sluice/protocol"
)

// Stats is a snapshot of the server's counters and bounds.
type Stats struct {
	// Connections and Handshakes are live; the Refused counts are per
	// reason since the server started.
	Connections, Handshakes                                       int
	ConnectionsAdmitted                                           uint64
	RefusedConnectionLimit, RefusedHandshakeLimit                 uint64
	RefusedHandshakePerAddress                                    uint64 // MaxHandshakesPerAddress reached by the source address
	HandshakeFailures, AuthenticationFailures, ProtocolViolations uint64

	// ServerCalls is the per-server call capacity (Active + Reserved
	// <= Capacity).
	ServerCalls governor.CallCapacitySnapshot

	// Calls counts calls handed to a handler goroutine; Refusals counts
	// calls the server refused without running them, by reason
	// ("concurrency", "queue_full", "call_capacity", "unavailable",
	// "unimplemented", and for compressed requests "invalid_body",
	// "retained_bytes", "decoded_bytes", "decode_failed", ...). A call its client cancelled (or whose
	// deadline or connection ended) while it was queued is not a refusal:
	// it is counted in EndedWhileQueued.
	Calls    uint64
	Refusals map[string]uint64
	// AdmissionGranted counts the calls admission let through: at once,
	// or from the queue (AdmissionQueued counts those that entered it),
	// and every call while admission is disabled. A call granted may
	// still be refused after it (call_capacity, a governor budget).
	AdmissionGranted, AdmissionQueued uint64
	EndedWhileQueued                  uint64
	OneWayDropped                     uint64 // one-way calls refused or dropped
	OneWayErrors                      uint64 // one-way calls whose handler failed
	Cancels                           uint64 // Cancel frames that found their call
	HandlerPanics                     uint64
	// ReadLoopPanics counts the connections a panic ended while one of
	// their frames was handled: a bug of sluice's, which costs that
	// connection (its client gets an Internal connection Error) and
	// never the process.
	ReadLoopPanics uint64

	// Backpressure counts the times a connection stopped being read
	// because its client did not read its responses; WriteTimeouts the
	// connections closed because their writes made no progress for the
	// write timeout; FrameMemoryRefusals the connections closed because
	// MaxFrameMemory could not hold their next large frame.
	Backpressure, WriteTimeouts, FrameMemoryRefusals uint64
	// StreamStalls counts the streams ended because a Send waited
	// Options.StreamStallTimeout for the client's window.
	StreamStalls uint64
	// AcceptErrors counts the Accept failures Serve backed off from and
	// retried (out of file descriptors, say).
	AcceptErrors uint64
	// FrameMemory is the bytes held now for large request frames (at
	// most Options.MaxFrameMemory).
	FrameMemory int64

	// Decompressions counts the decodes of compressed requests started
	// (each request is decoded at most once, and only after its call
	// reservation: a refused request costs none); DecodedBytes the bytes
	// they produced; DecodeFailures those that failed (corrupt, not the
	// declared length, cancelled); CompressedResponses the unary responses
	// sent compressed; CompressedStreamMessages the stream messages sent
	// compressed (a client-streaming call's response included: it is a
	// stream Message).
	Decompressions, DecodedBytes, DecodeFailures, CompressedResponses uint64
	CompressedStreamMessages                                          uint64
	// CompressedBytesIn counts the compressed bytes of the requests
	// decoded (DecodedBytes what they decoded to); CompressedBytesOut the
	// bytes of the unary responses sent compressed, UncompressedBytesOut
	// their size before compression.
	CompressedBytesIn, CompressedBytesOut, UncompressedBytesOut uint64
	// Governor reads the governor's budgets (each Used returns to zero
	// when no call is in flight).
	Governor governor.Snapshot

	// Admission is the admission kernel's own snapshot.
	Admission kernel.Stats
}

// Stats returns a snapshot of the server's counters.
func (s *Server) Stats() Stats {
	g := s.gate.Stats()
	st := Stats{
		Connections:              g.Connections,
		Handshakes:               g.Handshakes,
		ConnectionsAdmitted:      g.Admitted,
		RefusedConnectionLimit:   g.RejectedConnectionLimit,
		RefusedHandshakeLimit:    g.RejectedHandshakeLimit,
		HandshakeFailures:        s.stats.handshakeFailures.Load(),
		AuthenticationFailures:   s.stats.authFailures.Load(),
		ProtocolViolations:       s.stats.violations.Load(),
		ServerCalls:              s.calls.Snapshot(),
		Calls:                    s.stats.calls.Load(),
		AdmissionGranted:         s.stats.granted.Load(),
		AdmissionQueued:          s.stats.queued.Load(),
		CompressedBytesIn:        s.stats.compressedIn.Load(),
		CompressedBytesOut:       s.stats.compressedOut.Load(),
		UncompressedBytesOut:     s.stats.uncompressedOut.Load(),
		Refusals:                 map[string]uint64{},
		OneWayDropped:            s.stats.oneWayDropped.Load(),
		OneWayErrors:             s.stats.oneWayErrors.Load(),
		EndedWhileQueued:         s.stats.refusals[dropCanceled].Load(),
		Cancels:                  s.stats.cancels.Load(),
		HandlerPanics:            s.stats.panics.Load(),
		ReadLoopPanics:           s.stats.readLoopPanics.Load(),
		Backpressure:             s.stats.backpressured.Load(),
		WriteTimeouts:            s.stats.writeTimeouts.Load(),
		FrameMemoryRefusals:      s.stats.frameBudgetRefusals.Load(),
		StreamStalls:             s.stats.streamStalls.Load(),
		AcceptErrors:             s.stats.acceptErrors.Load(),
		FrameMemory:              s.frameBudget.InUse(),
		Decompressions:           s.stats.decompressions.Load(),
		DecodedBytes:             s.stats.decodedBytes.Load(),
		DecodeFailures:           s.stats.decodeFailures.Load(),
		CompressedResponses:      s.stats.compressedResponses.Load(),
		CompressedStreamMessages: s.stats.compressedStreamMessages.Load(),
		Governor:                 s.governor.Snapshot(),
		Admission:                s.kernel.Stats(),
	}
	st.RefusedHandshakePerAddress = g.RejectedHandshakePerAddress
	for i := range dropCanceled {
		if n := s.stats.refusals[i].Load(); n > 0 {
			st.Refusals[dropReason(i).String()] = n
		}
	}
	return st
}

// counters are the server's atomic counters.
type counters struct {
	handshakeFailures, authFailures, violations atomic.Uint64
	calls, oneWayDropped, oneWayErrors          atomic.Uint64
	cancels, panics, readLoopPanics             atomic.Uint64
	backpressured, writeTimeouts                atomic.Uint64
	frameBudgetRefusals, streamStalls           atomic.Uint64
	acceptErrors                                atomic.Uint64
	decompressions, decodedBytes                atomic.Uint64
	decodeFailures, compressedResponses         atomic.Uint64
	compressedStreamMessages                    atomic.Uint64
	granted, queued                             atomic.Uint64
	compressedIn, compressedOut                 atomic.Uint64
	uncompressedOut                             atomic.Uint64
	refusals                                    [dropReasonCount]atomic.Uint64
}

// dropReason classifies a refused call for Stats.Refusals.
type dropReason uint8

const (
	dropConcurrency dropReason = iota
	dropRate
	dropQueueFull
	dropQueueTimeout
	dropUnavailable
	dropPartition
	dropCapacity
	dropDraining
	dropUnknown
	dropMetadata
	dropInvalidBody
	dropRetained
	dropDecoded
	dropDecodeFailed
	dropStreamBytes
	dropCanceled // not a refusal: the call's context ended while queued (keep it after every refusal)
	dropReasonCount
)

var dropNames = [...]string{"concurrency", "rate", "queue_full", "queue_timeout", "unavailable", "partition_capacity", "call_capacity", "draining", "unimplemented", "metadata_limit", "invalid_body", ReasonRetainedBytes, ReasonDecodedBytes, "decode_failed", ReasonStreamBytes, "canceled"}

func (d dropReason) String() string { return dropNames[d] }

func (c *counters) refused(d dropReason) { c.refusals[d].Add(1) }

// admissionRefusal turns a refusal of Permit.Start or Wait into the Error
// frame the caller gets: ResourceExhausted with the kernel's reason and
// retry hint, Unavailable once admission is sealed, or the context's end.
func admissionRefusal(p *kernel.Permit, err error) (protocol.ErrorFrame, dropReason) {
	switch {
	case errors.Is(err, kernel.ErrUnavailable):
		return protocol.ErrorFrame{Code: protocol.CodeUnavailable, Message: "server stopping", Reason: kernel.ReasonUnavailable.String()}, dropUnavailable
	case errors.Is(err, kernel.ErrRejected):
		f := protocol.ErrorFrame{Code: protocol.CodeResourceExhausted, Message: "admission refused: " + p.Scope(), Reason: p.Reason().String()}
		if at := p.RetryAt(); !at.IsZero() {
			if d := time.Until(at); d > 0 {
				f.RetryAfter = d
			}
		}
		return f, reasonDrop(p.Reason())
	case errors.Is(err, context.DeadlineExceeded):
		// The call's budget ran out in the queue, or before it could
		// queue (Start checks the context): the caller is told so, as
		// for a budget that runs out in the handler.
		return protocol.ErrorFrame{Code: protocol.CodeDeadlineExceeded, Message: "the call's time budget ran out"}, dropCanceled
	default:
		return protocol.ErrorFrame{Code: protocol.CodeCanceled, Message: err.Error()}, dropCanceled
	}
}

func reasonDrop(r kernel.Reason) dropReason {
	switch r {
	case kernel.ReasonConcurrency:
		return dropConcurrency
	case kernel.ReasonRate:
		return dropRate
	case kernel.ReasonQueueFull:
		return dropQueueFull
	case kernel.ReasonQueueTimeout:
		return dropQueueTimeout
	case kernel.ReasonPartitionCapacity:
		return dropPartition
	default:
		return dropUnavailable
	}
}

// capacityRefusal is the answer to a call over the call capacity.
func capacityRefusal(level governor.CapacityLevel) protocol.ErrorFrame {
	return protocol.ErrorFrame{
		Code:    protocol.CodeResourceExhausted,
		Message: "call capacity of the " + level.String() + " reached",
		Reason:  governor.CallCapacityReason,
	}
}
