package protocol

// Message is the decoded payload of a Message frame: one message of a
// stream (id != 0), in either direction (plus the EndStream flag of its
// header).
//
// Payload layout: with FlagHasMetadata a metadata block (the response
// headers: server to client, on the server's first frame of the stream);
// the rest is the body, in compressed form (as for [Request]) with
// FlagCompressed. FlagEndStream (client to server) marks the client's last
// message. The direction of the flags is the endpoint's to check (see
// [MessageFlagsFromClient]).
type Message struct {
	// Metadata aliases the payload after ParseMessage.
	Metadata Metadata
	// Body aliases the payload after ParseMessage; nil when empty. For a
	// compressed message it holds the compressed bytes only.
	Body []byte
	// Compressed, CodecID and OriginalLength describe a compressed body.
	// Flow control charges a message its uncompressed length: OriginalLength
	// when Compressed, len(Body) otherwise.
	Compressed     bool
	CodecID        uint8
	OriginalLength uint32
	// EndStream mirrors FlagEndStream: the client sends nothing more.
	EndStream bool
}

// ParseMessage decodes a Message frame payload into m, whose Metadata
// storage is reused. h must be the frame's validated header. Body and
// Metadata alias payload. It does not allocate once m.Metadata has grown.
// Metadata over lim's limits is reported as for [ParseRequest]: the rest is
// decoded, m.Metadata is left empty, and the error is a
// [*MetadataLimitError].
func ParseMessage(h Header, payload []byte, lim Limits, m *Message) error {
	m.Metadata.view()
	if err := checkFrame(h, FrameMessage, payload); err != nil {
		return err
	}
	rest := payload
	var limitErr error
	if h.Flags.Has(FlagHasMetadata) {
		n, err := ParseMetadata(rest, lim, &m.Metadata)
		if limitErr = err; err != nil && !isMetadataLimit(err) {
			return err
		}
		rest = rest[n:]
	}
	b, err := parseBody("message", rest, h.Flags, lim)
	if err != nil {
		m.Metadata.view()
		return err
	}
	m.Body, m.Compressed, m.CodecID, m.OriginalLength = b.data, b.compressed, b.codec, b.origLen
	m.EndStream = h.Flags.Has(FlagEndStream)
	return limitErr
}

// AppendMessage appends a complete Message frame with the given stream id
// to dst. FlagCompressed, FlagEndStream and FlagHasMetadata (for non-empty
// metadata) are derived from m; which of them a side may send is the
// caller's to respect ([MessageFlagsFromClient], [MessageFlagsFromServer]).
// It does not allocate when dst has enough capacity. It returns an error
// wrapping [ErrInvalidValue], and dst unchanged, for id 0 or an invalid
// compressed body.
func AppendMessage(dst []byte, id uint64, m *Message) ([]byte, error) {
	if id == 0 {
		return dst, invalid("message: id 0")
	}
	var f Flags
	size := 0
	if m.Metadata.Len() > 0 {
		size += m.Metadata.EncodedLen()
		f |= FlagHasMetadata
	}
	b := body{data: m.Body, compressed: m.Compressed, codec: m.CodecID, origLen: m.OriginalLength}
	bs, err := b.size("message")
	if err != nil {
		return dst, err
	}
	if m.Compressed {
		f |= FlagCompressed
	}
	if m.EndStream {
		f |= FlagEndStream
	}
	dst, err = appendFrameHeader(dst, FrameMessage, f, id, size+bs)
	if err != nil {
		return dst, err
	}
	if f.Has(FlagHasMetadata) {
		dst = m.Metadata.appendBlock(dst)
	}
	return b.appendTo(dst), nil
}
