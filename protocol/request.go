package protocol

import (
	"encoding/binary"
	"time"
)

// Request is the decoded payload of a Request frame (plus the request
// flags of its header).
//
// Payload layout: uvarint service id, uvarint method id (each <= 65535);
// with FlagHasBudget a uvarint remaining budget in microseconds (> 0); with
// FlagHasMetadata a metadata block; the rest is the body. With
// FlagCompressed the body is: uint8 codec id (non-zero), uvarint original
// length, compressed bytes (at least one).
//
// With FlagStream the request opens a stream: the body is its first client
// message with FlagHasMessage, and empty without it.
type Request struct {
	// Service and Method address the method by its position in the
	// HandshakeAck method table.
	Service, Method uint16
	// Budget is the caller's remaining time budget, valid when HasBudget.
	// It is carried in whole microseconds; AppendRequest truncates finer
	// precision and rejects budgets below one microsecond.
	Budget    time.Duration
	HasBudget bool
	// Metadata aliases the payload after ParseRequest.
	Metadata Metadata
	// Body aliases the payload after ParseRequest; nil when empty. For a
	// compressed request it holds the compressed bytes only.
	Body []byte
	// Compressed, CodecID and OriginalLength describe a compressed body
	// (FlagCompressed). The body is never decompressed by this package.
	Compressed     bool
	CodecID        uint8
	OriginalLength uint32
	// OneWay and Cancellable mirror FlagOneWay and FlagCancellable.
	OneWay, Cancellable bool
	// Stream, HasMessage and EndStream mirror FlagStream, FlagHasMessage
	// and FlagEndStream: the request opens a stream, its body is the first
	// client message, and the client sends nothing more. HasMessage and
	// EndStream need Stream; Stream excludes OneWay and implies that the
	// call is cancellable (Cancellable mirrors the flag only).
	Stream, HasMessage, EndStream bool
}

// ParseRequest decodes a Request frame payload into r, whose Metadata
// storage is reused. h must be the frame's validated header. Body and
// Metadata alias payload. ParseRequest does not allocate once r.Metadata
// has grown to the entry count.
//
// A well-formed metadata block over lim's metadata limits is not a
// violation: ParseRequest decodes the rest of the request, leaves
// r.Metadata empty and returns a [*MetadataLimitError].
func ParseRequest(h Header, payload []byte, lim Limits, r *Request) error {
	r.Metadata.view()
	if err := checkFrame(h, FrameRequest, payload); err != nil {
		return err
	}
	c := cursor{b: payload, what: "request"}
	svc, err := c.uvarint("service id")
	if err != nil {
		return err
	}
	mth, err := c.uvarint("method id")
	if err != nil {
		return err
	}
	if svc > 0xFFFF || mth > 0xFFFF {
		return violation("request: service id %d / method id %d exceeds 65535", svc, mth)
	}
	r.Service, r.Method = uint16(svc), uint16(mth)
	r.Budget, r.HasBudget = 0, false
	if h.Flags.Has(FlagHasBudget) {
		us, err := c.uvarint("budget")
		if err != nil {
			return err
		}
		if us == 0 || us > maxMicros {
			return violation("request: budget %dµs out of range", us)
		}
		r.Budget, r.HasBudget = time.Duration(us)*time.Microsecond, true
	}
	var limitErr error
	if h.Flags.Has(FlagHasMetadata) {
		n, err := ParseMetadata(c.b, lim, &r.Metadata)
		if limitErr = err; err != nil && !isMetadataLimit(err) {
			return err
		}
		c.b = c.b[n:]
	}
	if h.Flags.Has(FlagStream) && !h.Flags.Has(FlagHasMessage) && len(c.b) != 0 {
		r.Metadata.view()
		return violation("request: stream without HasMessage has a %d-byte body", len(c.b))
	}
	b, err := parseBody("request", c.b, h.Flags, lim)
	if err != nil {
		r.Metadata.view()
		return err
	}
	r.Body, r.Compressed, r.CodecID, r.OriginalLength = b.data, b.compressed, b.codec, b.origLen
	r.OneWay, r.Cancellable = h.Flags.Has(FlagOneWay), h.Flags.Has(FlagCancellable)
	r.Stream, r.HasMessage, r.EndStream = h.Flags.Has(FlagStream), h.Flags.Has(FlagHasMessage), h.Flags.Has(FlagEndStream)
	return limitErr
}

// AppendRequest appends a complete Request frame (header and payload) with
// the given id to dst. Flags are derived from r: OneWay, Cancellable,
// Compressed, HasBudget, Stream, HasMessage, EndStream, and HasMetadata
// when r.Metadata is non-empty. It does not allocate when dst has enough
// capacity. It returns an error wrapping [ErrInvalidValue], and dst
// unchanged, for id 0, OneWay together with Cancellable or Stream,
// HasMessage or EndStream without Stream, a stream without HasMessage
// that has a body (or Compressed), a budget below one microsecond, or a
// compressed body with codec id 0 or no data.
func AppendRequest(dst []byte, id uint64, r *Request) ([]byte, error) {
	if id == 0 {
		return dst, invalid("request: id 0")
	}
	if r.OneWay && r.Cancellable {
		return dst, invalid("request: OneWay and Cancellable together")
	}
	if r.Stream && r.OneWay {
		return dst, invalid("request: Stream and OneWay together")
	}
	if !r.Stream && (r.HasMessage || r.EndStream) {
		return dst, invalid("request: HasMessage or EndStream without Stream")
	}
	if r.Stream && !r.HasMessage && (len(r.Body) != 0 || r.Compressed) {
		return dst, invalid("request: a stream without HasMessage has a body")
	}
	var f Flags
	if r.OneWay {
		f |= FlagOneWay
	}
	if r.Cancellable {
		f |= FlagCancellable
	}
	if r.Stream {
		f |= FlagStream
	}
	if r.HasMessage {
		f |= FlagHasMessage
	}
	if r.EndStream {
		f |= FlagEndStream
	}
	size := uvarintLen(uint64(r.Service)) + uvarintLen(uint64(r.Method))
	var us uint64
	if r.HasBudget {
		if r.Budget < time.Microsecond {
			return dst, invalid("request: budget %v below 1µs", r.Budget)
		}
		us = uint64(r.Budget / time.Microsecond)
		size += uvarintLen(us)
		f |= FlagHasBudget
	}
	if r.Metadata.Len() > 0 {
		size += r.Metadata.EncodedLen()
		f |= FlagHasMetadata
	}
	b := body{data: r.Body, compressed: r.Compressed, codec: r.CodecID, origLen: r.OriginalLength}
	bs, err := b.size("request")
	if err != nil {
		return dst, err
	}
	if r.Compressed {
		f |= FlagCompressed
	}
	dst, err = appendFrameHeader(dst, FrameRequest, f, id, size+bs)
	if err != nil {
		return dst, err
	}
	dst = binary.AppendUvarint(dst, uint64(r.Service))
	dst = binary.AppendUvarint(dst, uint64(r.Method))
	if r.HasBudget {
		dst = binary.AppendUvarint(dst, us)
	}
	if f.Has(FlagHasMetadata) {
		dst = r.Metadata.appendBlock(dst)
	}
	return b.appendTo(dst), nil
}
