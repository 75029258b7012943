package client

import (
	"context"
	"errors"

	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/protocol/status"
)

// outcome is how one endpoint attempt ended. It drives the retry decision
// and is what a per-endpoint admission policy will be told (DESIGN §5).
type outcome uint8

const (
	outcomeSuccess outcome = iota
	// outcomeRemoteError: the server answered with an Error frame.
	outcomeRemoteError
	// outcomeSendFailure: the request was never written (a failed or
	// closed writer, a going-away connection).
	outcomeSendFailure
	// outcomeConnClosed: the connection ended after the request was queued;
	// the server may or may not have run it.
	outcomeConnClosed
	// outcomeGoAway: a GoAway said the request was not processed.
	outcomeGoAway
	outcomeCanceled
	outcomeDeadlineExceeded
	// outcomeLocal: refused by the client itself before anything was sent
	// (unknown method, oversized request); says nothing about the endpoint.
	outcomeLocal
	// outcomePolicyRejected: the endpoint admission policy refused the
	// attempt; no report is owed.
	outcomePolicyRejected
	// outcomeNotConnected: the request was never written because the
	// endpoint has no connection (its dial failed, or it is backing off
	// after a failed dial); a send failure for the policy, which a call
	// waiting for readiness does not count as an attempt.
	outcomeNotConnected
)

func (o outcome) String() string {
	switch o {
	case outcomeSuccess:
		return "success"
	case outcomeRemoteError:
		return "remote_error"
	case outcomeSendFailure:
		return "send_failure"
	case outcomeConnClosed:
		return "connection_closed"
	case outcomeGoAway:
		return "goaway"
	case outcomeCanceled:
		return "cancelled"
	case outcomeDeadlineExceeded:
		return "deadline_exceeded"
	case outcomeLocal:
		return "local"
	case outcomePolicyRejected:
		return "policy_rejected"
	case outcomeNotConnected:
		return "not_connected"
	}
	return "unknown"
}

// ctxOutcome maps a context error to its outcome.
func ctxOutcome(err error) outcome {
	if errors.Is(err, context.DeadlineExceeded) {
		return outcomeDeadlineExceeded
	}
	return outcomeCanceled
}

// unavailable returns an Unavailable status with msg.
func unavailable(msg string) *status.Error { return status.New(protocol.CodeUnavailable, msg) }

// errClientClosed ends the calls of a closed Client.
var errClientClosed = status.New(protocol.CodeCanceled, "the client is closed")

// statusOf turns a parsed Error frame into the error the caller gets.
func statusOf(f *protocol.ErrorFrame) *status.Error {
	return &status.Error{Code: f.Code, Message: f.Message, Reason: f.Reason, RetryAfter: f.RetryAfter}
}
