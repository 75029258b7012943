package spi

import "time"

// EndpointPolicy is a client's admission policy for endpoint attempts: a
// circuit breaker, client-side adaptive throttling, a per-endpoint
// concurrency limit, or an application's own. The client asks it before
// every attempt of a call to one endpoint (a retry is another attempt) and
// reports to it the outcome of every attempt it allowed.
//
// Contract:
//   - TryAcquire is synchronous: it must not block, do I/O or call back
//     into the client. A refusal sends nothing; the client may try another
//     endpoint or give up, and owes the policy no report.
//   - For every decision with Allowed, the client calls Report exactly
//     once, with that decision's Token, on the same policy instance that
//     allowed it, even after the client replaced or disabled the policy.
//   - Both methods are called concurrently from many goroutines.
//   - Report must not panic; a panic is recovered, logged and ignored by
//     the client. A panic in TryAcquire fails that attempt with a clear
//     error.
//   - Tokens are the policy's own: the client stores and returns them
//     unchanged. A policy must tolerate an unknown or repeated token in
//     Report (it may ignore it) without corrupting its state.
//
// A policy that implements io.Closer is closed by the client once it has
// been replaced or disabled and its last allowed attempt has reported;
// Close runs exactly once, under no lock of the client, and a panic in it is
// recovered and logged.
type EndpointPolicy interface {
	TryAcquire(endpoint, method string) EndpointDecision
	Report(outcome AttemptOutcome, token uint64)
}

// EndpointDecision is an EndpointPolicy's answer for one attempt.
type EndpointDecision struct {
	// Allowed lets the attempt be sent; the client then owes one Report.
	Allowed bool
	// Token is returned unchanged in the attempt's Report.
	Token uint64
	// RetryAfter, on a refusal, is when the policy expects to allow this
	// endpoint again; zero when it does not know.
	RetryAfter time.Duration
}

// AttemptOutcome is how an allowed attempt ended.
type AttemptOutcome struct {
	Kind OutcomeKind
	// Code is the call's status code, with gRPC's numbering (0 = OK), as
	// the caller sees it.
	Code uint8
	// ResponseObserved reports that a Response or Error frame for the
	// attempt arrived from the server: the endpoint answered.
	ResponseObserved bool
	// Elapsed is the time from the attempt's send to its end.
	Elapsed time.Duration
}

// OutcomeKind classifies how an attempt ended.
type OutcomeKind uint8

const (
	// OutcomeSuccess: a Response arrived (for a one-way call: the request
	// was written).
	OutcomeSuccess OutcomeKind = iota + 1
	// OutcomeRemoteError: the server answered with an Error frame; Code
	// tells which.
	OutcomeRemoteError
	// OutcomeSendFailure: the request could not be written (no
	// connection, a dial or write failure): the server never saw it.
	OutcomeSendFailure
	// OutcomeConnectionClosed: the connection was lost after the request
	// was written and before its answer.
	OutcomeConnectionClosed
	// OutcomeGoAway: the server's GoAway said the request was not
	// processed.
	OutcomeGoAway
	// OutcomeCancelled: the caller cancelled the call.
	OutcomeCancelled
	// OutcomeDeadlineExceeded: the call's deadline passed.
	OutcomeDeadlineExceeded
)

var outcomeNames = [...]string{"", "success", "remote_error", "send_failure", "connection_closed", "goaway", "cancelled", "deadline_exceeded"}

// String returns the outcome's name, for example "connection_closed".
func (k OutcomeKind) String() string {
	if k >= OutcomeSuccess && k <= OutcomeDeadlineExceeded {
		return outcomeNames[k]
	}
	return "OutcomeKind(?)"
}

// Valid reports whether k is a defined outcome.
func (k OutcomeKind) Valid() bool { return k >= OutcomeSuccess && k <= OutcomeDeadlineExceeded }
