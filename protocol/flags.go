package protocol

import (
	"strconv"
	"strings"
)

// Flags is the 16-bit flag field of the frame header (offset 2). Each flag
// is valid only on the frame types listed with it (see
// [FrameType.AllowedFlags]); any other flag is a violation.
type Flags uint16

const (
	// FlagOneWay (Request): no Response or Error is sent for the call.
	FlagOneWay Flags = 0x0001
	// FlagCancellable (Request): the client may send Cancel for the call.
	// Not allowed together with FlagOneWay.
	FlagCancellable Flags = 0x0002
	// FlagCompressed (Request, Response, Message): the body starts with a codec id
	// (uint8) and the original length (uvarint), followed by compressed bytes.
	FlagCompressed Flags = 0x0004
	// FlagHasBudget (Request): a remaining time budget follows the route.
	FlagHasBudget Flags = 0x0008
	// FlagHasMetadata (Request, Response, Error, Message, End): a metadata
	// block follows. On Message and End it is sent by the server only (see
	// [MessageFlagsFromServer]).
	FlagHasMetadata Flags = 0x0010
	// FlagStream (Request): the request opens a stream. Not allowed together
	// with FlagOneWay; Cancellable is implied, whether the flag is set or not.
	FlagStream Flags = 0x0020
	// FlagHasMessage (Request with FlagStream): the body is the stream's
	// first client message (possibly empty). Without it the body is empty.
	FlagHasMessage Flags = 0x0040
	// FlagEndStream (Request with FlagStream; Message, client to server
	// only): the client sends nothing more on the stream (half-close).
	FlagEndStream Flags = 0x0080
)

var flagNames = [...]struct {
	f    Flags
	name string
}{
	{FlagOneWay, "OneWay"},
	{FlagCancellable, "Cancellable"},
	{FlagCompressed, "Compressed"},
	{FlagHasBudget, "HasBudget"},
	{FlagHasMetadata, "HasMetadata"},
	{FlagStream, "Stream"},
	{FlagHasMessage, "HasMessage"},
	{FlagEndStream, "EndStream"},
}

// Has reports whether all bits of v are set in f.
func (f Flags) Has(v Flags) bool { return f&v == v }

// String returns the set flags joined by "|", e.g. "OneWay|HasMetadata";
// unknown bits are printed in hex. The zero value prints as "0".
func (f Flags) String() string {
	if f == 0 {
		return "0"
	}
	var b strings.Builder
	for _, n := range flagNames {
		if f&n.f != 0 {
			if b.Len() > 0 {
				b.WriteByte('|')
			}
			b.WriteString(n.name)
			f &^= n.f
		}
	}
	if f != 0 {
		if b.Len() > 0 {
			b.WriteByte('|')
		}
		b.WriteString("0x" + strconv.FormatUint(uint64(f), 16))
	}
	return b.String()
}
