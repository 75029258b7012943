package protocol

import (
	"errors"
	"fmt"
	"strings"
)

// ProtocolError reports a violation of the wire protocol by the peer: bad
// magic, unknown frame type, disallowed flag, wrong id class, oversized or
// malformed payload, trailing bytes, exceeded limits or invalid UTF-8.
//
// A ProtocolError is fatal to the connection. The receiver must close the
// connection; the byte stream is not resynchronized.
type ProtocolError struct {
	// Reason is a short human-readable description of the violated rule.
	Reason string
}

// Error implements the error interface.
func (e *ProtocolError) Error() string {
	return "sluice/protocol: violation: " + e.Reason
}

// IsViolation reports whether err is, or wraps, a [*ProtocolError].
func IsViolation(err error) bool {
	var pe *ProtocolError
	return errors.As(err, &pe)
}

// IsBadMagic reports whether err is the violation of a frame header that
// does not begin with [Magic]: the peer does not speak this protocol (or
// speaks TLS), as opposed to a sluice peer breaking a rule.
func IsBadMagic(err error) bool {
	var pe *ProtocolError
	return errors.As(err, &pe) && strings.HasPrefix(pe.Reason, badMagic)
}

const badMagic = "header: bad magic"

// violation returns a *ProtocolError. It allocates; it is only used on
// error paths.
func violation(format string, args ...any) error {
	return &ProtocolError{Reason: fmt.Sprintf(format, args...)}
}

// ErrInvalidValue is wrapped by every error an Append function returns for
// a value it refuses to encode.
var ErrInvalidValue = errors.New("sluice/protocol: invalid value")

// ErrUnsupportedVersion is returned by [ParseHandshake] when the client
// announces a protocol version other than [Version]. It is not a
// [*ProtocolError]: the server answers with a connection-level Error frame
// (code FailedPrecondition, message "unsupported protocol version") and
// closes the connection.
var ErrUnsupportedVersion = errors.New("sluice/protocol: unsupported protocol version")

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrInvalidValue, fmt.Sprintf(format, args...))
}
