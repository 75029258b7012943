package protocol

// End is the decoded payload of an End frame (id != 0). From the client
// it is a half-close without a message, and its payload is empty. From
// the server it ends the stream with status OK, and with FlagHasMetadata
// it carries the trailers (when End is the server's first frame of the
// stream, its metadata is also the response headers: docs/streaming.md).
//
// Payload layout: with FlagHasMetadata a metadata block; nothing else. No
// trailing bytes. Whether HasMetadata is allowed (server to client only)
// is the endpoint's to check ([EndFlagsFromClient], [EndFlagsFromServer]).
type End struct {
	// Metadata aliases the payload after ParseEnd.
	Metadata Metadata
}

// ParseEnd decodes an End frame payload into e, whose Metadata storage is
// reused. h must be the frame's validated header. Metadata aliases
// payload. It does not allocate once e.Metadata has grown. Metadata over
// lim's limits is reported as for [ParseRequest] (e.Metadata is left
// empty).
func ParseEnd(h Header, payload []byte, lim Limits, e *End) error {
	e.Metadata.view()
	if err := checkFrame(h, FrameEnd, payload); err != nil {
		return err
	}
	c := cursor{b: payload, what: "end"}
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
	return limitErr
}

// AppendEnd appends a complete End frame with the given stream id to dst;
// FlagHasMetadata is set when e.Metadata is non-empty (a server's
// trailers; a client sends none). It does not allocate when dst has
// enough capacity. It returns an error wrapping [ErrInvalidValue], and dst
// unchanged, for id 0.
func AppendEnd(dst []byte, id uint64, e *End) ([]byte, error) {
	if id == 0 {
		return dst, invalid("end: id 0")
	}
	var f Flags
	size := 0
	if e.Metadata.Len() > 0 {
		size = e.Metadata.EncodedLen()
		f |= FlagHasMetadata
	}
	dst, err := appendFrameHeader(dst, FrameEnd, f, id, size)
	if err != nil {
		return dst, err
	}
	if f.Has(FlagHasMetadata) {
		dst = e.Metadata.appendBlock(dst)
	}
	return dst, nil
}
