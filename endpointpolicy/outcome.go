package endpointpolicy

import "github.com/sluicerpc/sluice/spi"

// Status codes, with gRPC's numbering, that the policies classify.
const (
	codeUnknown           = 2
	codeDeadlineExceeded  = 4
	codeResourceExhausted = 8
	codeInternal          = 13
	codeUnavailable       = 14
)

// DefaultIsFailure is the circuit breaker's default classifier: an attempt
// failed if it could not be sent, lost its connection, exceeded its
// deadline, or got a remote error Unavailable (14), DeadlineExceeded (4),
// ResourceExhausted (8), Internal (13) or Unknown (2). Successes and other
// remote errors (the endpoint answered properly) are not failures. The
// breaker never asks about GoAway and caller cancellation: those outcomes
// are not samples at all.
func DefaultIsFailure(o spi.AttemptOutcome) bool {
	switch o.Kind {
	case spi.OutcomeSendFailure, spi.OutcomeConnectionClosed, spi.OutcomeDeadlineExceeded:
		return true
	case spi.OutcomeRemoteError:
		switch o.Code {
		case codeUnavailable, codeDeadlineExceeded, codeResourceExhausted, codeInternal, codeUnknown:
			return true
		}
	}
	return false
}

// sampled reports whether an outcome of kind k is a sample of the
// endpoint's health: GoAway (the request was not processed), caller
// cancellation and undefined kinds are not.
func sampled(k spi.OutcomeKind) bool {
	return k.Valid() && k != spi.OutcomeGoAway && k != spi.OutcomeCancelled
}
