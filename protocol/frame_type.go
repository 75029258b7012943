package protocol

import "strconv"

// FrameType identifies the payload layout of a frame (header offset 1).
type FrameType uint8

// Frame types of protocol version 1. Any other value is a violation.
// Message, End and WindowUpdate need [CapStreaming] (the endpoint checks).
const (
	FrameHandshake    FrameType = 1 // client->server, first frame, id 0
	FrameHandshakeAck FrameType = 2 // server->client, id 0
	FrameRequest      FrameType = 3 // client->server, id != 0
	FrameResponse     FrameType = 4 // server->client, id != 0
	FrameError        FrameType = 5 // id != 0: a call's error; id 0: connection-level error
	FrameCancel       FrameType = 6 // client->server, id != 0
	FrameGoAway       FrameType = 7 // either direction, id 0
	FramePing         FrameType = 8 // either direction, id 0
	FramePong         FrameType = 9 // either direction, id 0
	// Stream frames (CapStreaming).
	FrameMessage      FrameType = 10 // either direction, id != 0: one message of a stream
	FrameEnd          FrameType = 11 // either direction, id != 0: half-close (client), OK end with trailers (server)
	FrameWindowUpdate FrameType = 12 // either direction, id 0 (the connection) or a stream's id
)

var frameTypeNames = [...]string{
	FrameHandshake:    "Handshake",
	FrameHandshakeAck: "HandshakeAck",
	FrameRequest:      "Request",
	FrameResponse:     "Response",
	FrameError:        "Error",
	FrameCancel:       "Cancel",
	FrameGoAway:       "GoAway",
	FramePing:         "Ping",
	FramePong:         "Pong",
	FrameMessage:      "Message",
	FrameEnd:          "End",
	FrameWindowUpdate: "WindowUpdate",
}

// Valid reports whether t is a frame type defined by protocol version 1.
func (t FrameType) Valid() bool {
	return t >= FrameHandshake && t <= FrameWindowUpdate
}

// String returns the frame type's name, or "FrameType(N)" for unknown values.
func (t FrameType) String() string {
	if t.Valid() {
		return frameTypeNames[t]
	}
	return "FrameType(" + strconv.Itoa(int(t)) + ")"
}

// idRule is the id class a frame type requires.
type idRule uint8

const (
	idZero    idRule = iota // id must be 0
	idNonZero               // id must not be 0
	idAny                   // either
)

const requestFlags = FlagOneWay | FlagCancellable | FlagCompressed | FlagHasBudget | FlagHasMetadata |
	FlagStream | FlagHasMessage | FlagEndStream

// frameRules holds, per frame type, the flags it allows and its id class.
var frameRules = [...]struct {
	flags Flags
	id    idRule
}{
	FrameHandshake:    {0, idZero},
	FrameHandshakeAck: {0, idZero},
	FrameRequest:      {requestFlags, idNonZero},
	FrameResponse:     {FlagCompressed | FlagHasMetadata, idNonZero},
	FrameError:        {FlagHasMetadata, idAny},
	FrameCancel:       {0, idNonZero},
	FrameGoAway:       {0, idZero},
	FramePing:         {0, idZero},
	FramePong:         {0, idZero},
	// Message and End: the union of both directions' flags; the endpoint
	// checks the direction (MessageFlagsFromClient and the like).
	FrameMessage:      {FlagCompressed | FlagHasMetadata | FlagEndStream, idNonZero},
	FrameEnd:          {FlagHasMetadata, idNonZero},
	FrameWindowUpdate: {0, idAny},
}

// AllowedFlags returns the flags that may be set on frames of type t; it
// returns 0 for unknown types. For Message and End it is the union of what
// the client and the server may set (see [MessageFlagsFromClient]).
func (t FrameType) AllowedFlags() Flags {
	if !t.Valid() {
		return 0
	}
	return frameRules[t].flags
}
