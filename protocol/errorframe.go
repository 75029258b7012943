package protocol

import (
	"encoding/binary"
	"time"
)

// Error frame limits.
const (
	// MaxMessageLen is the maximum length of the message of an Error or
	// GoAway frame. Messages must be valid UTF-8.
	MaxMessageLen = 4096
	// MaxReasonLen is the maximum length of an Error frame's reason.
	MaxReasonLen = 64
)

// Admission rejection reasons carried by ResourceExhausted Error frames.
// The reason field is open: any string of lower-case ASCII letters and '_'
// up to MaxReasonLen bytes is valid.
const (
	ReasonConcurrency       = "concurrency"
	ReasonQueueFull         = "queue_full"
	ReasonRate              = "rate"
	ReasonPartitionCapacity = "partition_capacity"
	ReasonConnectionLimit   = "connection_limit"
	ReasonCallCapacity      = "call_capacity"
)

// ErrorFrame is the decoded payload of an Error frame. With a non-zero
// frame id it is the error outcome of that call; with id 0 it is a
// connection-level error sent just before the sender closes the connection.
//
// Payload layout: uint8 code (1..16), message (uvarint length + UTF-8,
// <= 4096 bytes), reason (uvarint length + [a-z_], <= 64 bytes), uvarint
// retry-after in microseconds (0 = no hint), and with FlagHasMetadata a
// metadata block. No trailing bytes.
type ErrorFrame struct {
	Code    Code
	Message string
	// Reason is the admission rejection detail (e.g. "queue_full"), empty
	// if none.
	Reason string
	// RetryAfter is a hint for when to retry; 0 means no hint. It is carried
	// in whole microseconds (finer precision is truncated).
	RetryAfter time.Duration
	// Metadata aliases the payload after ParseError.
	Metadata Metadata
}

// ParseError decodes an Error frame payload into e. Message and Reason are
// copied (this allocates); Metadata aliases payload and reuses e's storage.
// Metadata over lim's limits is reported as for [ParseRequest], with the
// other fields decoded.
func ParseError(h Header, payload []byte, lim Limits, e *ErrorFrame) error {
	e.Metadata.view()
	if err := checkFrame(h, FrameError, payload); err != nil {
		return err
	}
	c := cursor{b: payload, what: "error"}
	code, err := c.u8("code")
	if err != nil {
		return err
	}
	if code == 0 || Code(code) > maxCode {
		return violation("error: code %d out of range 1..16", code)
	}
	msg, err := c.bytes("message", MaxMessageLen)
	if err != nil {
		return err
	}
	if !validMessage(msg) {
		return violation("error: message is not valid UTF-8")
	}
	reason, err := c.bytes("reason", MaxReasonLen)
	if err != nil {
		return err
	}
	if !validReason(reason) {
		return violation("error: invalid reason %q", reason)
	}
	retry, err := c.uvarint("retry-after")
	if err != nil {
		return err
	}
	if retry > maxMicros {
		return violation("error: retry-after %dµs out of range", retry)
	}
	var limitErr error
	if h.Flags.Has(FlagHasMetadata) {
		n, err := ParseMetadata(c.b, lim, &e.Metadata)
		if limitErr = err; err != nil && !isMetadataLimit(err) {
			return err
		}
		c.b = c.b[n:]
	}
	if err := c.end(); err != nil {
		e.Metadata.view()
		return err
	}
	e.Code = Code(code)
	e.Message = string(msg)
	e.Reason = string(reason)
	e.RetryAfter = time.Duration(retry) * time.Microsecond
	return limitErr
}

// AppendError appends a complete Error frame with the given id (0 for a
// connection-level error) to dst. FlagHasMetadata is set when e.Metadata
// is non-empty. It returns an error wrapping [ErrInvalidValue], and dst
// unchanged, for code OK or an unknown code, a message longer than 4096
// bytes or not valid UTF-8, an invalid reason, or a negative RetryAfter.
func AppendError(dst []byte, id uint64, e *ErrorFrame) ([]byte, error) {
	if e.Code == CodeOK || !e.Code.Valid() {
		return dst, invalid("error: code %v", e.Code)
	}
	if !validMessageString(e.Message) {
		return dst, invalid("error: message longer than 4096 bytes or not UTF-8")
	}
	if !validReason(e.Reason) {
		return dst, invalid("error: reason %q", e.Reason)
	}
	if e.RetryAfter < 0 {
		return dst, invalid("error: negative retry-after %v", e.RetryAfter)
	}
	retry := uint64(e.RetryAfter / time.Microsecond)
	size := 1 + bytesLen(len(e.Message)) + bytesLen(len(e.Reason)) + uvarintLen(retry)
	var f Flags
	if e.Metadata.Len() > 0 {
		size += e.Metadata.EncodedLen()
		f |= FlagHasMetadata
	}
	dst, err := appendFrameHeader(dst, FrameError, f, id, size)
	if err != nil {
		return dst, err
	}
	dst = append(dst, byte(e.Code))
	dst = appendString(dst, e.Message)
	dst = appendString(dst, e.Reason)
	dst = binary.AppendUvarint(dst, retry)
	if f.Has(FlagHasMetadata) {
		dst = e.Metadata.appendBlock(dst)
	}
	return dst, nil
}

func validReason[T string | []byte](b T) bool {
	if len(b) > MaxReasonLen {
		return false
	}
	for i := 0; i < len(b); i++ {
		if c := b[i]; (c < 'a' || c > 'z') && c != '_' {
			return false
		}
	}
	return true
}
