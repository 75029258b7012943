package protocol_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/protocol"
)

// ackWithEntries is a HandshakeAck whose method table holds entries
// services and methods in all (one service, the rest its methods), every
// name MaxNameLen bytes long.
func ackWithEntries(entries int) *protocol.HandshakeAck {
	methods := make([]string, entries-1)
	for i := range methods {
		methods[i] = fmt.Sprintf("%s%06d", strings.Repeat("m", protocol.MaxNameLen-6), i)
	}
	return &protocol.HandshakeAck{
		Version: protocol.Version, MaxFrameSize: protocol.MinFrameSize,
		Services: []protocol.ServiceInfo{{Name: strings.Repeat("s", protocol.MaxNameLen), Methods: methods}},
	}
}

// The largest method table an ack may carry, every name at its longest,
// round-trips and fits MaxHandshakeAckSize, the bound a client reads the
// answer to its Handshake with; one entry more is refused when encoding
// (a server cannot announce it) and when parsing (a client does not hold
// it).
func TestTheHandshakeAckMethodTableIsBounded(t *testing.T) {
	frame, err := protocol.AppendHandshakeAck(nil, ackWithEntries(protocol.MaxAckEntries))
	require.NoError(t, err)
	h, err := protocol.ParseHeader(frame, 1<<30)
	require.NoError(t, err)
	require.LessOrEqual(t, h.Length, protocol.MaxHandshakeAckSize(protocol.DefaultLimits()))
	var a protocol.HandshakeAck
	require.NoError(t, protocol.ParseHandshakeAck(h, frame[protocol.HeaderSize:], &a))
	require.Len(t, a.Services[0].Methods, protocol.MaxAckEntries-1)

	_, err = protocol.AppendHandshakeAck(nil, ackWithEntries(protocol.MaxAckEntries+1))
	require.True(t, errors.Is(err, protocol.ErrInvalidValue), "%v", err)
	require.ErrorContains(t, err, "the method table has 4097 services and methods, limit 4096")
}

// MaxHandshakeAckSize is about a megabyte by default, and never above the
// receiver's frame size.
func TestMaxHandshakeAckSize(t *testing.T) {
	lim := protocol.DefaultLimits()
	require.EqualValues(t, 1_127_626, protocol.MaxHandshakeAckSize(lim))
	lim.MaxFrameSize = protocol.MinFrameSize
	require.EqualValues(t, protocol.MinFrameSize, protocol.MaxHandshakeAckSize(lim))
}
