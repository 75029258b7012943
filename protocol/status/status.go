// Package status is the error of a sluice call: a status code with gRPC's
// meanings, a message, and for admission rejections a reason and a retry
// hint. Server handlers return it to choose the status their caller sees;
// clients return it for every call that ends with an Error frame.
package status

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sluicerpc/sluice/protocol"
)

// Error is a call's status other than OK.
type Error struct {
	Code    protocol.Code
	Message string
	// Reason is the admission rejection detail ("concurrency",
	// "queue_full", "call_capacity", ...), empty otherwise.
	Reason string
	// RetryAfter is how long the server suggests waiting before a retry;
	// zero when it gave no hint.
	RetryAfter time.Duration
}

// New returns an Error with code and message.
func New(code protocol.Code, message string) *Error {
	return &Error{Code: code, Message: message}
}

// Errorf returns an Error with code and a formatted message.
func Errorf(code protocol.Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Error returns "sluice: <Code>: <message>", with the reason when set.
func (e *Error) Error() string {
	if e.Reason != "" {
		return fmt.Sprintf("sluice: %v (%s): %s", e.Code, e.Reason, e.Message)
	}
	return fmt.Sprintf("sluice: %v: %s", e.Code, e.Message)
}

// Is reports whether target is an *Error with the same code, so that
// errors.Is(err, status.New(protocol.CodeUnavailable, "")) matches by code.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// FromError returns the *Error in err's chain, if any.
func FromError(err error) (*Error, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e, true
	}
	return nil, false
}

// Code returns the code of err: CodeOK for nil, the code of an *Error in
// its chain, CodeCanceled or CodeDeadlineExceeded for the context errors,
// CodeUnknown otherwise.
func Code(err error) protocol.Code {
	switch {
	case err == nil:
		return protocol.CodeOK
	case errors.Is(err, context.Canceled):
		return protocol.CodeCanceled
	case errors.Is(err, context.DeadlineExceeded):
		return protocol.CodeDeadlineExceeded
	}
	if e, ok := FromError(err); ok {
		return e.Code
	}
	return protocol.CodeUnknown
}
