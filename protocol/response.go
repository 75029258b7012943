package protocol

// Response is the decoded payload of a Response frame.
//
// Payload layout: with FlagHasMetadata a metadata block; the rest is the
// body, in compressed form (as for [Request]) with FlagCompressed.
type Response struct {
	// Metadata aliases the payload after ParseResponse.
	Metadata Metadata
	// Body aliases the payload after ParseResponse; nil when empty. For a
	// compressed response it holds the compressed bytes only.
	Body []byte
	// Compressed, CodecID and OriginalLength describe a compressed body.
	Compressed     bool
	CodecID        uint8
	OriginalLength uint32
}

// ParseResponse decodes a Response frame payload into r, whose Metadata
// storage is reused. h must be the frame's validated header. Body and
// Metadata alias payload. It does not allocate once r.Metadata has grown.
// Metadata over lim's limits is reported as for [ParseRequest].
func ParseResponse(h Header, payload []byte, lim Limits, r *Response) error {
	r.Metadata.view()
	if err := checkFrame(h, FrameResponse, payload); err != nil {
		return err
	}
	rest := payload
	var limitErr error
	if h.Flags.Has(FlagHasMetadata) {
		n, err := ParseMetadata(rest, lim, &r.Metadata)
		if limitErr = err; err != nil && !isMetadataLimit(err) {
			return err
		}
		rest = rest[n:]
	}
	b, err := parseBody("response", rest, h.Flags, lim)
	if err != nil {
		r.Metadata.view()
		return err
	}
	r.Body, r.Compressed, r.CodecID, r.OriginalLength = b.data, b.compressed, b.codec, b.origLen
	return limitErr
}

// AppendResponse appends a complete Response frame with the given id to
// dst. FlagCompressed and FlagHasMetadata (for non-empty metadata) are
// derived from r. It does not allocate when dst has enough capacity. It
// returns an error wrapping [ErrInvalidValue], and dst unchanged, for id 0
// or an invalid compressed body.
func AppendResponse(dst []byte, id uint64, r *Response) ([]byte, error) {
	if id == 0 {
		return dst, invalid("response: id 0")
	}
	var f Flags
	size := 0
	if r.Metadata.Len() > 0 {
		size += r.Metadata.EncodedLen()
		f |= FlagHasMetadata
	}
	b := body{data: r.Body, compressed: r.Compressed, codec: r.CodecID, origLen: r.OriginalLength}
	bs, err := b.size("response")
	if err != nil {
		return dst, err
	}
	if r.Compressed {
		f |= FlagCompressed
	}
	dst, err = appendFrameHeader(dst, FrameResponse, f, id, size+bs)
	if err != nil {
		return dst, err
	}
	if f.Has(FlagHasMetadata) {
		dst = r.Metadata.appendBlock(dst)
	}
	return b.appendTo(dst), nil
}
