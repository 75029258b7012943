package protocol_test

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/protocol"
)

func maxEntries(t testing.TB) protocol.Metadata {
	var m protocol.Metadata
	for i := range int(protocol.DefaultLimits().MaxMetadataEntries) {
		require.NoError(t, m.Add(fmt.Sprintf("k-%d.x_y", i), []byte{byte(i)}))
	}
	return m
}

func TestHeaderRoundTrip(t *testing.T) {
	tests := []protocol.Header{
		{Type: protocol.FrameHandshake, Length: 10},
		{Type: protocol.FrameRequest, Flags: protocol.FlagOneWay | protocol.FlagHasMetadata | protocol.FlagCompressed | protocol.FlagHasBudget, ID: 1},
		{Type: protocol.FrameRequest, Flags: protocol.FlagCancellable, ID: math.MaxUint64, Length: protocol.DefaultLimits().MaxFrameSize},
		{Type: protocol.FrameResponse, Flags: protocol.FlagCompressed | protocol.FlagHasMetadata, ID: 7},
		{Type: protocol.FrameError, Flags: protocol.FlagHasMetadata, ID: 0},
		{Type: protocol.FrameError, ID: 9},
		{Type: protocol.FrameCancel, ID: 3, Length: 1},
		{Type: protocol.FrameGoAway},
		{Type: protocol.FramePing, Length: 8},
		{Type: protocol.FramePong, Length: 8},
		{Type: protocol.FrameRequest, Flags: protocol.FlagStream | protocol.FlagHasMessage | protocol.FlagEndStream | protocol.FlagCompressed | protocol.FlagCancellable, ID: 11},
		{Type: protocol.FrameRequest, Flags: protocol.FlagStream | protocol.FlagEndStream, ID: 11},
		{Type: protocol.FrameMessage, Flags: protocol.FlagCompressed | protocol.FlagHasMetadata | protocol.FlagEndStream, ID: 12, Length: 3},
		{Type: protocol.FrameEnd, Flags: protocol.FlagHasMetadata, ID: 13},
		{Type: protocol.FrameWindowUpdate, ID: 0, Length: 2},
		{Type: protocol.FrameWindowUpdate, ID: math.MaxUint64, Length: 20},
	}
	for _, h := range tests {
		t.Run(h.Type.String(), func(t *testing.T) {
			b := protocol.AppendHeader(nil, h)
			require.Len(t, b, protocol.HeaderSize)
			assert.Equal(t, byte(protocol.Magic), b[0])
			got, err := protocol.ParseHeader(b, protocol.DefaultLimits().MaxFrameSize)
			require.NoError(t, err)
			assert.Equal(t, h, got)
		})
	}
}

func TestHeaderLayout(t *testing.T) {
	b := protocol.AppendHeader(nil, protocol.Header{Type: protocol.FrameRequest, Flags: 0x0102, Length: 0x03040506, ID: 0x0708090a0b0c0d0e})
	assert.Equal(t, []byte{0xA7, 3, 0x02, 0x01, 0x06, 0x05, 0x04, 0x03, 0x0e, 0x0d, 0x0c, 0x0b, 0x0a, 0x09, 0x08, 0x07}, b)
}

func TestRequestRoundTrip(t *testing.T) {
	lim := protocol.DefaultLimits()
	tests := []struct {
		name string
		id   uint64
		req  protocol.Request
	}{
		{"minimal", 1, protocol.Request{}},
		{"max id and route", math.MaxUint64, protocol.Request{Service: math.MaxUint16, Method: math.MaxUint16, Body: []byte("x")}},
		{"budget 1us", 2, protocol.Request{HasBudget: true, Budget: time.Microsecond}},
		{"budget truncated", 2, protocol.Request{HasBudget: true, Budget: 1500 * time.Nanosecond}},
		{"large budget", 2, protocol.Request{HasBudget: true, Budget: 1<<62 - 1}},
		{"metadata", 3, protocol.Request{Metadata: md(t, "a", "1", "a", "2", "trace-id.v_1", ""), Body: []byte("body")}},
		{"max metadata entries", 4, protocol.Request{Metadata: maxEntries(t)}},
		{"one-way", 5, protocol.Request{OneWay: true, Body: []byte{0}}},
		{"cancellable", 6, protocol.Request{Cancellable: true, Service: 200, Method: 300}},
		{"compressed", 7, protocol.Request{Compressed: true, CodecID: 1, OriginalLength: 1000, Body: []byte{1, 2, 3}}},
		{"compressed max decoded", 7, protocol.Request{Compressed: true, CodecID: 255, OriginalLength: lim.MaxDecodedSize, Body: []byte{1}}},
		{"everything", 8, protocol.Request{Service: 1, Method: 2, HasBudget: true, Budget: time.Second, Metadata: md(t, "k", "v"),
			Compressed: true, CodecID: 2, Body: []byte("zz"), Cancellable: true}},
		{"stream without message", 9, protocol.Request{Stream: true, Service: 4, Method: 5, Metadata: md(t, "k", "v")}},
		{"stream half-closed without message", 9, protocol.Request{Stream: true, EndStream: true}},
		{"stream with empty message", 9, protocol.Request{Stream: true, HasMessage: true}},
		{"server stream", 10, protocol.Request{Stream: true, HasMessage: true, EndStream: true, Body: []byte("first"),
			HasBudget: true, Budget: time.Second, Cancellable: true}},
		{"stream compressed message", 10, protocol.Request{Stream: true, HasMessage: true, Compressed: true, CodecID: 1, OriginalLength: 9, Body: []byte{1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			frame, err := protocol.AppendRequest([]byte("prefix"), tt.id, &tt.req)
			require.NoError(t, err)
			require.Equal(t, "prefix", string(frame[:6]))
			h, payload := split(t, frame[6:])
			assert.Equal(t, tt.id, h.ID)
			var got protocol.Request
			require.NoError(t, protocol.ParseRequest(h, payload, lim, &got))
			want := viewRequest(&tt.req)
			want.Budget = int64(tt.req.Budget.Truncate(time.Microsecond))
			assert.Equal(t, want, viewRequest(&got))
			if len(tt.req.Body) == 0 {
				assert.Nil(t, got.Body)
			}
		})
	}
}

func TestResponseRoundTrip(t *testing.T) {
	lim := protocol.DefaultLimits()
	tests := []struct {
		name string
		id   uint64
		resp protocol.Response
	}{
		{"empty", 1, protocol.Response{}},
		{"body", math.MaxUint64, protocol.Response{Body: bytes.Repeat([]byte("ab"), 1000)}},
		{"metadata", 2, protocol.Response{Metadata: md(t, "x", "y", "x", "z"), Body: []byte("b")}},
		{"metadata only", 2, protocol.Response{Metadata: md(t, "x", "")}},
		{"max entries", 3, protocol.Response{Metadata: maxEntries(t)}},
		{"compressed", 4, protocol.Response{Compressed: true, CodecID: 3, OriginalLength: 0, Body: []byte{9}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			frame := must(t)(protocol.AppendResponse(nil, tt.id, &tt.resp))
			h, payload := split(t, frame)
			assert.Equal(t, tt.id, h.ID)
			var got protocol.Response
			require.NoError(t, protocol.ParseResponse(h, payload, lim, &got))
			assert.Equal(t, viewResponse(&tt.resp), viewResponse(&got))
		})
	}
}

func TestErrorRoundTrip(t *testing.T) {
	lim := protocol.DefaultLimits()
	tests := []struct {
		name string
		id   uint64
		e    protocol.ErrorFrame
	}{
		{"connection-level", 0, protocol.ErrorFrame{Code: protocol.CodeUnauthenticated, Message: "bad token"}},
		{"admission", 1, protocol.ErrorFrame{Code: protocol.CodeResourceExhausted, Message: "queue full", Reason: protocol.ReasonQueueFull, RetryAfter: 250 * time.Millisecond}},
		{"max id, max code", math.MaxUint64, protocol.ErrorFrame{Code: protocol.CodeUnauthenticated}},
		{"canceled", 2, protocol.ErrorFrame{Code: protocol.CodeCanceled}},
		{"max message and reason", 3, protocol.ErrorFrame{Code: protocol.CodeInternal, Message: strings.Repeat("é", 2048), Reason: strings.Repeat("_", 64)}},
		{"retry 1us", 4, protocol.ErrorFrame{Code: protocol.CodeUnavailable, RetryAfter: time.Microsecond}},
		{"metadata", 5, protocol.ErrorFrame{Code: protocol.CodeNotFound, Metadata: md(t, "detail", "\x00\xff")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			frame := must(t)(protocol.AppendError(nil, tt.id, &tt.e))
			h, payload := split(t, frame)
			assert.Equal(t, tt.id, h.ID)
			var got protocol.ErrorFrame
			require.NoError(t, protocol.ParseError(h, payload, lim, &got))
			assert.Equal(t, viewError(&tt.e), viewError(&got))
		})
	}
}

func TestCancelRoundTrip(t *testing.T) {
	for _, tt := range []struct {
		id     uint64
		reason protocol.CancelReason
	}{{1, protocol.CancelCaller}, {math.MaxUint64, protocol.CancelDeadline}} {
		t.Run(tt.reason.String(), func(t *testing.T) {
			frame := must(t)(protocol.AppendCancel(nil, tt.id, tt.reason))
			h, payload := split(t, frame)
			assert.Equal(t, tt.id, h.ID)
			got, err := protocol.ParseCancel(h, payload)
			require.NoError(t, err)
			assert.Equal(t, tt.reason, got)
		})
	}
}

func TestGoAwayRoundTrip(t *testing.T) {
	for _, g := range []protocol.GoAway{
		{},
		{LastID: math.MaxUint64, Code: protocol.CodeUnavailable, Message: "draining"},
		{LastID: 1, Code: protocol.CodeUnauthenticated, Message: strings.Repeat("m", 4096)},
	} {
		t.Run(g.Code.String(), func(t *testing.T) {
			frame := must(t)(protocol.AppendGoAway(nil, &g))
			h, payload := split(t, frame)
			var got protocol.GoAway
			require.NoError(t, protocol.ParseGoAway(h, payload, &got))
			assert.Equal(t, g, got)
		})
	}
}

func TestPingPongRoundTrip(t *testing.T) {
	data := [8]byte{1, 2, 3, 4, 5, 6, 7, 8}
	for _, frame := range [][]byte{protocol.AppendPing(nil, data), protocol.AppendPong(nil, data)} {
		h, payload := split(t, frame)
		got, err := protocol.ParsePing(h, payload)
		require.NoError(t, err)
		assert.Equal(t, data, got)
	}
}

func TestHandshakeRoundTrip(t *testing.T) {
	lim := protocol.DefaultLimits()
	for _, hs := range []protocol.Handshake{
		{Version: 1, MaxFrameSize: protocol.MinFrameSize},
		{Version: 1, Capabilities: protocol.CapCancel | protocol.CapOneWay | protocol.CapCompression | protocol.CapKeepalive | 1<<31,
			MaxFrameSize: math.MaxUint32, Codecs: []string{"proto", "json v2", strings.Repeat("~", 64)}, Auth: []byte("token")},
		{Version: 1, MaxFrameSize: 1 << 20, Codecs: make16(), Auth: bytes.Repeat([]byte{0}, int(lim.MaxAuthBytes))},
	} {
		frame := must(t)(protocol.AppendHandshake(nil, &hs))
		h, payload := split(t, frame)
		var got protocol.Handshake
		require.NoError(t, protocol.ParseHandshake(h, payload, lim, &got))
		assert.Equal(t, hs, got)
	}
}

func make16() []string {
	s := make([]string, 16)
	for i := range s {
		s[i] = fmt.Sprint("c", i)
	}
	return s
}

func TestHandshakeAckRoundTrip(t *testing.T) {
	big := make([]string, 300)
	for i := range big {
		big[i] = fmt.Sprint("Method", i)
	}
	for _, a := range []protocol.HandshakeAck{
		{Version: 1, MaxFrameSize: protocol.MinFrameSize},
		{Version: 1, Capabilities: protocol.CapKeepalive, MaxFrameSize: 4 << 20, MaxMetadataBytes: 8192, MaxConcurrentCalls: 100,
			KeepaliveInterval: 30 * time.Second, Codecs: []string{"proto"},
			Services: []protocol.ServiceInfo{
				{Name: "echo.Echo", Methods: []string{"Say", "Stream"}},
				{Name: strings.Repeat("s", 255)},
				{Name: "big", Methods: big},
			}},
	} {
		frame := must(t)(protocol.AppendHandshakeAck(nil, &a))
		h, payload := split(t, frame)
		var got protocol.HandshakeAck
		require.NoError(t, protocol.ParseHandshakeAck(h, payload, &got))
		assert.Equal(t, a, got)
	}
}

func TestMetadataBlock(t *testing.T) {
	lim := protocol.DefaultLimits()
	block, err := protocol.AppendMetadata([]byte{0xEE}, []protocol.MetadataEntry{{"a", []byte("1")}, {"b", nil}, {"a", []byte("2")}})
	require.NoError(t, err)
	block = append(block, "tail"...)
	var m protocol.Metadata
	n, err := protocol.ParseMetadata(block[1:], lim, &m)
	require.NoError(t, err)
	assert.Equal(t, "tail", string(block[1+n:]))
	assert.Equal(t, []kv{{"a", "1"}, {"b", ""}, {"a", "2"}}, entries(&m))
	assert.Equal(t, n, m.EncodedLen())
	v, ok := m.Get("a")
	assert.True(t, ok)
	assert.Equal(t, "1", string(v))
	_, ok = m.Get("c")
	assert.False(t, ok)

	// Adding to a parsed view copies; the payload is untouched.
	orig := bytes.Clone(block)
	require.NoError(t, m.Add("c", []byte("3")))
	assert.Equal(t, orig, block)
	assert.Equal(t, []kv{{"a", "1"}, {"b", ""}, {"a", "2"}, {"c", "3"}}, entries(&m))

	m.Reset()
	assert.Equal(t, 0, m.Len())
	require.NoError(t, m.Add("z", nil))
	assert.Equal(t, []kv{{"z", ""}}, entries(&m))

	_, err = protocol.AppendMetadata(nil, []protocol.MetadataEntry{{"Upper", nil}})
	assert.ErrorIs(t, err, protocol.ErrInvalidValue)
	assert.ErrorIs(t, m.Add("", nil), protocol.ErrInvalidValue)
	assert.ErrorIs(t, m.Add(strings.Repeat("k", 129), nil), protocol.ErrInvalidValue)
	require.NoError(t, m.Add(strings.Repeat("k", 128), nil))
}

func TestIDSequence(t *testing.T) {
	var s protocol.IDSequence
	require.NoError(t, s.Accept(1))
	require.NoError(t, s.Accept(2))
	require.NoError(t, s.Accept(10))
	assert.Equal(t, uint64(10), s.Last())
	for _, id := range []uint64{0, 10, 9, 1} {
		err := s.Accept(id)
		assert.True(t, protocol.IsViolation(err), "id %d", id)
	}
	require.NoError(t, s.Accept(math.MaxUint64))
	assert.True(t, protocol.IsViolation(s.Accept(math.MaxUint64)))
	assert.Equal(t, uint64(math.MaxUint64), s.Last())
}

func TestStrings(t *testing.T) {
	assert.Equal(t, "ResourceExhausted", protocol.CodeResourceExhausted.String())
	assert.Equal(t, "OK", protocol.CodeOK.String())
	assert.Equal(t, "Unauthenticated", protocol.CodeUnauthenticated.String())
	assert.Equal(t, "Code(17)", protocol.Code(17).String())
	assert.Equal(t, "HandshakeAck", protocol.FrameHandshakeAck.String())
	assert.Equal(t, "FrameType(0)", protocol.FrameType(0).String())
	assert.Equal(t, "0", protocol.Flags(0).String())
	assert.Equal(t, "OneWay|HasMetadata|0x8000", (protocol.FlagOneWay | protocol.FlagHasMetadata | 0x8000).String())
	assert.True(t, (protocol.FlagOneWay | protocol.FlagCompressed).Has(protocol.FlagCompressed))
	assert.False(t, protocol.FlagOneWay.Has(protocol.FlagOneWay|protocol.FlagCompressed))
	assert.Equal(t, "deadline", protocol.CancelDeadline.String())
	assert.Equal(t, protocol.FlagHasMetadata, protocol.FrameError.AllowedFlags())
	assert.Equal(t, "Stream|HasMessage|EndStream", (protocol.FlagStream | protocol.FlagHasMessage | protocol.FlagEndStream).String())
	assert.Equal(t, "Message", protocol.FrameMessage.String())
	assert.Equal(t, "End", protocol.FrameEnd.String())
	assert.Equal(t, "WindowUpdate", protocol.FrameWindowUpdate.String())
	assert.Equal(t, "FrameType(13)", protocol.FrameType(13).String())
	assert.Equal(t, protocol.FlagCompressed|protocol.FlagHasMetadata|protocol.FlagEndStream, protocol.FrameMessage.AllowedFlags())
	assert.Equal(t, protocol.FlagHasMetadata, protocol.FrameEnd.AllowedFlags())
	assert.Equal(t, protocol.Flags(0), protocol.FrameWindowUpdate.AllowedFlags())
	assert.Equal(t, protocol.Capabilities(16), protocol.CapStreaming)
}

func TestLimits(t *testing.T) {
	lim := protocol.DefaultLimits()
	require.NoError(t, lim.Validate())
	assert.Equal(t, protocol.Limits{MaxFrameSize: 4 << 20, MaxMetadataBytes: 8 << 10, MaxMetadataEntries: 64, MaxAuthBytes: 16 << 10, MaxDecodedSize: 64 << 20}, lim)
	assert.Error(t, protocol.Limits{}.Validate())
	bad := lim
	bad.MaxFrameSize = 4095
	assert.ErrorContains(t, bad.Validate(), "MaxFrameSize")
}

// TestStreamDirectionMasks: the masks of each direction together are the
// flags the parser accepts, and they differ where docs/streaming.md says
// (HasMetadata from the server only, EndStream from the client only).
func TestStreamDirectionMasks(t *testing.T) {
	assert.Equal(t, protocol.FrameMessage.AllowedFlags(), protocol.MessageFlagsFromClient|protocol.MessageFlagsFromServer)
	assert.Equal(t, protocol.FrameEnd.AllowedFlags(), protocol.EndFlagsFromClient|protocol.EndFlagsFromServer)
	assert.Equal(t, protocol.FlagEndStream, protocol.MessageFlagsFromClient&^protocol.MessageFlagsFromServer)
	assert.Equal(t, protocol.FlagHasMetadata, protocol.MessageFlagsFromServer&^protocol.MessageFlagsFromClient)
	assert.Equal(t, protocol.Flags(0), protocol.EndFlagsFromClient)
	assert.Equal(t, protocol.FlagHasMetadata, protocol.EndFlagsFromServer)
}
