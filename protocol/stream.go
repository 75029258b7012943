package protocol

// Streams (docs/streaming.md, behind [CapStreaming]).
//
// A stream is opened by a Request with [FlagStream]; its messages travel
// in Message frames, the client half-closes with [FlagEndStream] (on the
// Request or a Message) or an End frame, and the server ends it with End
// (status OK, trailers) or Error. WindowUpdate frames return and grow
// flow-control credit.
//
// Who checks what. This package checks everything a single frame shows:
// the header ([ParseHeader]: flags allowed on the type, the stream flag
// rules of a Request, the id class) and the payload (the Parse functions).
// For Message and End it accepts the union of the flags either side may
// set, like it accepts every frame type whatever its direction. The
// endpoint checks what needs the connection's role or state, each a
// violation:
//
//   - the direction of a Message's or End's flags: a receiving server
//     rejects flags outside [MessageFlagsFromClient] / [EndFlagsFromClient],
//     a receiving client those outside [MessageFlagsFromServer] /
//     [EndFlagsFromServer];
//   - response headers (HasMetadata) only on the server's first frame of
//     the stream;
//   - stream frames, or a Request with FlagStream, when CapStreaming was
//     not negotiated;
//   - a Message or End for an id that was never opened as a stream, or a
//     client Message or End after the client's half-close (frames for a
//     stream that has ended are ignored: they may have crossed the end);
//   - flow control: a message sent without credit, a second borrowing
//     message, a double return, a window above [MaxWindow] (package
//     protocol/flow keeps the accounts).

// Direction masks of the stream frames' flags. A receiver checks a frame
// from its peer with one comparison, e.g. on the server:
//
//	if h.Flags&^protocol.MessageFlagsFromClient != 0 { /* violation */ }
const (
	// MessageFlagsFromClient are the flags a client may set on a Message:
	// a compressed body and the half-close.
	MessageFlagsFromClient = FlagCompressed | FlagEndStream
	// MessageFlagsFromServer are the flags a server may set on a Message:
	// a compressed body and the response headers (on its first frame of
	// the stream only).
	MessageFlagsFromServer = FlagCompressed | FlagHasMetadata
	// EndFlagsFromClient: a client's End is an empty half-close.
	EndFlagsFromClient Flags = 0
	// EndFlagsFromServer: a server's End may carry trailers.
	EndFlagsFromServer = FlagHasMetadata
)
