package client

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"

	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/protocol/status"
)

// Errors of connection attempts. They say what happened, once, in the
// terms of the protocol ("connecting to 10.0.0.1:7878: connection
// refused"), not in those of the Go operations that failed ("dial tcp
// 10.0.0.1:7878: connect: connection refused"); errors.Is and errors.As
// still find the cause.

// dialError is a failed connection attempt. status.FromError finds its
// status, Unavailable unless the server refused the handshake with a status
// of its own (Unauthenticated, PermissionDenied, ...); errors.Is and
// errors.As also find the cause (a net.OpError, an x509 error, ...).
type dialError struct {
	addr  string
	st    *status.Error
	cause error // a *connectError, or what connect returned
}

func newDialError(addr string, cause error) *dialError {
	st, ok := status.FromError(cause)
	if !ok {
		st = unavailable("connecting to " + addr + ": " + cause.Error())
	}
	return &dialError{addr: addr, st: st, cause: cause}
}

func (e *dialError) Error() string   { return "connecting to " + e.addr + ": " + e.cause.Error() }
func (e *dialError) Unwrap() []error { return []error{e.st, e.cause} }

// connectError is what failed in connect, described (msg) and as it
// happened (cause).
type connectError struct {
	msg   string
	cause error
}

func (e *connectError) Error() string { return e.msg }
func (e *connectError) Unwrap() error { return e.cause }

// Stages of a connection attempt, as the errors name them.
const (
	stageTCP       = "opening the TCP connection"
	stageTLS       = "in the TLS handshake"
	stageHandshake = "sending the handshake"
	stageAnswer    = "waiting for the handshake answer"
)

// stages index the stages for endpoint.stage (0: no dial running).
var stages = [...]string{"", stageTCP, stageTLS, stageHandshake, stageAnswer}

// setStage records the stage of ep's running dial, for the errors of the
// calls that wait for it.
func (ep *endpoint) setStage(stage string) {
	for i, s := range stages {
		if s == stage {
			ep.stage.Store(int32(i))
			return
		}
	}
}

// stageName is the stage of ep's running dial, "" if none.
func (ep *endpoint) stageName() string {
	if i := ep.stage.Load(); i > 0 && int(i) < len(stages) {
		return stages[i]
	}
	return ""
}

// connectFailure describes err, which ended connect at stage. ctx is the
// dial's own context: when it ended, the dial timed out (or the Client was
// closed), whatever error the operation returned.
func (c *Client) connectFailure(ctx context.Context, stage string, err error) error {
	if ctxErr(ctx) != nil { // the socket's deadline may fire before ctx's timer
		if c.isClosed() {
			return errClientClosed
		}
		return &connectError{fmt.Sprintf("no answer within the dial timeout (%v), %s", c.cfg.DialTimeout, stage), err}
	}
	plaintext := c.cfg.TLS == nil
	if closedByPeer(err) {
		switch {
		case stage == stageAnswer && plaintext && !isReset(err) && !errors.Is(err, io.ErrUnexpectedEOF):
			return &connectError{"the server closed the connection without acknowledging the handshake: it probably speaks TLS (this client uses plaintext), or refused the connection at its connection limit", err}
		case stage == stageAnswer || stage == stageHandshake:
			msg := "the server closed the connection without acknowledging the handshake: it probably refused the connection at its connection limit"
			if plaintext {
				msg += ", or speaks TLS (this client uses plaintext)"
			}
			return &connectError{msg, err}
		case stage == stageTLS:
			return &connectError{"the server closed the connection in the TLS handshake: it probably refused the connection at its connection limit, or does not speak TLS", err}
		}
	}
	d := describe(err)
	switch stage {
	case stageTCP:
		return &connectError{d, err}
	case stageTLS:
		return &connectError{"TLS handshake: " + d, err}
	}
	return &connectError{stage + ": " + d, err}
}

// closedByPeer reports whether err says the server closed the connection.
func closedByPeer(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || isReset(err) || errors.Is(err, syscall.EPIPE)
}

func isReset(err error) bool { return errors.Is(err, syscall.ECONNRESET) }

// describe says what a network or TLS error means, without the Go
// operation, addresses and package names of its text.
func describe(err error) string {
	var (
		dnsErr    *net.DNSError
		unknownCA x509.UnknownAuthorityError
		hostErr   x509.HostnameError
		invalid   x509.CertificateInvalidError
		record    tls.RecordHeaderError
		opErr     *net.OpError
	)
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded) || errors.Is(err, context.DeadlineExceeded):
		return "timed out"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused (nothing listens there)"
	case isReset(err):
		return "connection reset by the server"
	case errors.Is(err, syscall.EPIPE), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "connection closed by the server"
	case errors.Is(err, syscall.EHOSTUNREACH):
		return "host unreachable"
	case errors.Is(err, syscall.ENETUNREACH):
		return "network unreachable"
	case errors.As(err, &dnsErr):
		return fmt.Sprintf("cannot resolve host %q: %s", dnsErr.Name, dnsErr.Err)
	case errors.As(err, &unknownCA):
		return "the server's certificate is not trusted: certificate signed by unknown authority"
	case errors.As(err, &hostErr):
		return "the server's certificate does not match its name: " + trimPackage(hostErr.Error())
	case errors.As(err, &invalid):
		return "the server's certificate is invalid: " + trimPackage(invalid.Error())
	case errors.As(err, &record):
		return "the server does not speak TLS (its answer is not a TLS record): configure the client for plaintext"
	case errors.As(err, &opErr) && opErr.Op == "remote error":
		return "the server refused the TLS handshake: " + trimPackage(opErr.Err.Error())
	case errors.Is(err, protocol.ErrWriterClosed):
		return "the connection is closed"
	case errors.As(err, &opErr):
		// "read tcp a->b: read: <what>": keep <what>.
		var sys *os.SyscallError
		if errors.As(opErr.Err, &sys) {
			return sys.Err.Error()
		}
		return trimPackage(opErr.Err.Error())
	}
	return trimPackage(err.Error())
}

// violationText is a protocol violation's rule ("the frame header is
// truncated"), or describe(err) for another error.
func violationText(err error) string {
	var pe *protocol.ProtocolError
	if errors.As(err, &pe) {
		return pe.Reason
	}
	return describe(err)
}

// trimPackage removes the package prefixes of an error's text ("tls: ",
// "x509: ", "sluice/protocol: ").
func trimPackage(s string) string {
	for _, p := range []string{"sluice/protocol: ", "tls: ", "x509: "} {
		s = strings.ReplaceAll(s, p, "")
	}
	return s
}

// waitError is the context's error of a call (or Dial) that ended while it
// waited for a dial: errors.Is finds the context error, status.Code maps it
// (DeadlineExceeded or Canceled), and the message says what the dial was
// doing.
type waitError struct {
	addr, stage string
	err         error
}

func (e *waitError) Error() string {
	what := "deadline exceeded"
	if errors.Is(e.err, context.Canceled) {
		what = "canceled"
	}
	if e.stage == "" {
		return what + " while connecting to " + e.addr
	}
	return what + " while connecting to " + e.addr + " (" + e.stage + ")"
}

func (e *waitError) Unwrap() error { return e.err }

// looksLikeTLS reports whether the failed read of the handshake answer
// saw bytes that are not a frame: a few bytes and the close (a TLS alert
// is 7), or a header that is not a sluice header.
func looksLikeTLS(err error) bool {
	return errors.Is(err, io.ErrUnexpectedEOF) || protocol.IsBadMagic(err)
}

// statusText is a status without the "sluice: " prefix of its Error.
func statusText(st *status.Error) string {
	if st.Reason != "" {
		return fmt.Sprintf("%v (%s): %s", st.Code, st.Reason, st.Message)
	}
	return fmt.Sprintf("%v: %s", st.Code, st.Message)
}
