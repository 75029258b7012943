package protocol

import "strconv"

// Code is a call status code. The values and names are gRPC's.
type Code uint8

// Status codes. An Error frame never carries CodeOK; a GoAway frame uses
// CodeOK for a graceful shutdown.
const (
	CodeOK                 Code = 0
	CodeCanceled           Code = 1
	CodeUnknown            Code = 2
	CodeInvalidArgument    Code = 3
	CodeDeadlineExceeded   Code = 4
	CodeNotFound           Code = 5
	CodeAlreadyExists      Code = 6
	CodePermissionDenied   Code = 7
	CodeResourceExhausted  Code = 8
	CodeFailedPrecondition Code = 9
	CodeAborted            Code = 10
	CodeOutOfRange         Code = 11
	CodeUnimplemented      Code = 12
	CodeInternal           Code = 13
	CodeUnavailable        Code = 14
	CodeDataLoss           Code = 15
	CodeUnauthenticated    Code = 16

	maxCode = CodeUnauthenticated
)

var codeNames = [...]string{
	"OK", "Canceled", "Unknown", "InvalidArgument", "DeadlineExceeded",
	"NotFound", "AlreadyExists", "PermissionDenied", "ResourceExhausted",
	"FailedPrecondition", "Aborted", "OutOfRange", "Unimplemented",
	"Internal", "Unavailable", "DataLoss", "Unauthenticated",
}

// Valid reports whether c is one of the 17 defined codes (0..16).
func (c Code) Valid() bool { return c <= maxCode }

// String returns the gRPC spelling of the code, e.g. "ResourceExhausted",
// or "Code(N)" for unknown values.
func (c Code) String() string {
	if c.Valid() {
		return codeNames[c]
	}
	return "Code(" + strconv.Itoa(int(c)) + ")"
}
