package protocol_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/protocol"
)

// raw builds a frame with an arbitrary header and payload.
func raw(t protocol.FrameType, f protocol.Flags, id uint64, payload ...[]byte) []byte {
	p := bytes.Join(payload, nil)
	return append(protocol.AppendHeader(nil, protocol.Header{Type: t, Flags: f, Length: uint32(len(p)), ID: id}), p...)
}

func uv(v uint64) []byte       { return binary.AppendUvarint(nil, v) }
func str(s string) []byte      { return append(uv(uint64(len(s))), s...) }
func u16(v uint16) []byte      { return binary.LittleEndian.AppendUint16(nil, v) }
func u32(v uint32) []byte      { return binary.LittleEndian.AppendUint32(nil, v) }
func u64(v uint64) []byte      { return binary.LittleEndian.AppendUint64(nil, v) }
func b(v ...byte) []byte       { return v }
func rep(c byte, n int) []byte { return bytes.Repeat([]byte{c}, n) }
func mdBlock(kvs ...string) []byte {
	out := uv(uint64(len(kvs) / 2))
	for _, s := range kvs {
		out = append(out, str(s)...)
	}
	return out
}

// decode validates a complete frame with the matching decoder.
func decode(frame []byte, lim protocol.Limits) error {
	h, err := protocol.ParseHeader(frame, lim.MaxFrameSize)
	if err != nil {
		return err
	}
	p := frame[protocol.HeaderSize:]
	if uint64(len(p)) != uint64(h.Length) {
		return errors.New("test frame length mismatch")
	}
	switch h.Type {
	case protocol.FrameHandshake:
		return protocol.ParseHandshake(h, p, lim, new(protocol.Handshake))
	case protocol.FrameHandshakeAck:
		return protocol.ParseHandshakeAck(h, p, new(protocol.HandshakeAck))
	case protocol.FrameRequest:
		return protocol.ParseRequest(h, p, lim, new(protocol.Request))
	case protocol.FrameResponse:
		return protocol.ParseResponse(h, p, lim, new(protocol.Response))
	case protocol.FrameError:
		return protocol.ParseError(h, p, lim, new(protocol.ErrorFrame))
	case protocol.FrameCancel:
		_, err := protocol.ParseCancel(h, p)
		return err
	case protocol.FrameGoAway:
		return protocol.ParseGoAway(h, p, new(protocol.GoAway))
	case protocol.FrameMessage:
		return protocol.ParseMessage(h, p, lim, new(protocol.Message))
	case protocol.FrameEnd:
		return protocol.ParseEnd(h, p, lim, new(protocol.End))
	case protocol.FrameWindowUpdate:
		return protocol.ParseWindowUpdate(h, p, new(protocol.WindowUpdate))
	default:
		_, err := protocol.ParsePing(h, p)
		return err
	}
}

func TestViolations(t *testing.T) {
	const (
		hs  = protocol.FrameHandshake
		ack = protocol.FrameHandshakeAck
		req = protocol.FrameRequest
		rsp = protocol.FrameResponse
		er  = protocol.FrameError
		cnl = protocol.FrameCancel
		ga  = protocol.FrameGoAway
		msg = protocol.FrameMessage
		end = protocol.FrameEnd
		wu  = protocol.FrameWindowUpdate
	)
	// valid prefixes
	hsHead := bytes.Join([][]byte{u16(1), u32(0), u32(4096)}, nil)
	ackHead := bytes.Join([][]byte{u16(1), u32(0), u32(4096), u32(0), u32(0), u32(0), uv(0)}, nil)
	overlong := append(rep(0x80, 10), 0x01)
	overflow := append(rep(0xff, 9), 0x02)
	tooMany := make([]string, 0, 130)
	for range 65 {
		tooMany = append(tooMany, "k", "v")
	}

	tests := []struct {
		name   string
		frame  []byte
		reason string
	}{
		// header
		{"short header", raw(req, 0, 1)[:15], "short header"},
		{"bad magic", append([]byte{0xA6}, raw(req, 0, 1, uv(0), uv(0))[1:]...), "bad magic"},
		{"type 0", raw(0, 0, 0), "unknown frame type"},
		{"type 13", raw(13, 0, 0), "unknown frame type"},
		{"type 255", raw(255, 0, 1), "unknown frame type"},
		{"unknown flag", raw(req, 0x0100, 1, uv(0), uv(0)), "not allowed"},
		{"high flag", raw(req, 0x8000, 1, uv(0), uv(0)), "not allowed"},
		{"one-way on response", raw(rsp, protocol.FlagOneWay, 1), "OneWay not allowed on Response"},
		{"budget on response", raw(rsp, protocol.FlagHasBudget, 1), "not allowed"},
		{"compressed on error", raw(er, protocol.FlagCompressed, 1), "not allowed"},
		{"metadata on handshake", raw(hs, protocol.FlagHasMetadata, 0), "not allowed"},
		{"flag on cancel", raw(cnl, protocol.FlagCancellable, 1, b(1)), "not allowed"},
		{"flag on ping", raw(protocol.FramePing, protocol.FlagOneWay, 0, rep(0, 8)), "not allowed"},
		{"one-way and cancellable", raw(req, protocol.FlagOneWay|protocol.FlagCancellable, 1, uv(0), uv(0)), "OneWay and Cancellable"},
		{"stream and one-way", raw(req, protocol.FlagStream|protocol.FlagOneWay, 1, uv(0), uv(0)), "Stream and OneWay"},
		{"has-message without stream", raw(req, protocol.FlagHasMessage, 1, uv(0), uv(0)), "HasMessage on a Request without Stream"},
		{"end-stream without stream", raw(req, protocol.FlagEndStream, 1, uv(0), uv(0)), "EndStream on a Request without Stream"},
		{"stream compressed without message", raw(req, protocol.FlagStream|protocol.FlagCompressed, 1, uv(0), uv(0), b(1), uv(1), b(1)), "Compressed on a stream Request without HasMessage"},
		{"stream flag on response", raw(rsp, protocol.FlagStream, 1), "Stream not allowed on Response"},
		{"end-stream on response", raw(rsp, protocol.FlagEndStream, 1), "not allowed"},
		{"handshake id", raw(hs, 0, 1), "non-zero id"},
		{"handshake ack id", raw(ack, 0, 1), "non-zero id"},
		{"goaway id", raw(ga, 0, 7), "non-zero id"},
		{"ping id", raw(protocol.FramePing, 0, 1, rep(0, 8)), "non-zero id"},
		{"pong id", raw(protocol.FramePong, 0, 1, rep(0, 8)), "non-zero id"},
		{"request id 0", raw(req, 0, 0, uv(0), uv(0)), "id 0"},
		{"response id 0", raw(rsp, 0, 0), "id 0"},
		{"cancel id 0", raw(cnl, 0, 0, b(1)), "id 0"},
		{"length over limit", raw(rsp, 0, 1, rep(0, 4<<20+1)), "exceeds max frame size"},
		{"ping short", raw(protocol.FramePing, 0, 0, rep(0, 7)), "want 8"},
		{"pong long", raw(protocol.FramePong, 0, 0, rep(0, 9)), "want 8"},
		{"ping empty", raw(protocol.FramePing, 0, 0), "want 8"},
		{"message id 0", raw(msg, 0, 0), "Message frame with id 0"},
		{"end id 0", raw(end, 0, 0), "End frame with id 0"},
		{"budget on message", raw(msg, protocol.FlagHasBudget, 1), "HasBudget not allowed on Message"},
		{"stream on message", raw(msg, protocol.FlagStream, 1), "not allowed"},
		{"has-message on message", raw(msg, protocol.FlagHasMessage, 1), "not allowed"},
		{"compressed on end", raw(end, protocol.FlagCompressed, 1), "Compressed not allowed on End"},
		{"end-stream on end", raw(end, protocol.FlagEndStream, 1), "not allowed"},
		{"metadata on window update", raw(wu, protocol.FlagHasMetadata, 0, uv(1), uv(0)), "HasMetadata not allowed on WindowUpdate"},
		{"end-stream on window update", raw(wu, protocol.FlagEndStream, 3, uv(1), uv(0)), "not allowed"},

		// handshake
		{"handshake empty", raw(hs, 0, 0), "truncated version"},
		{"handshake truncated", raw(hs, 0, 0, u16(1), u32(0)), "truncated max frame size"},
		{"handshake small frame", raw(hs, 0, 0, u16(1), u32(0), u32(4095), uv(0), uv(0)), "below 4096"},
		{"handshake 17 codecs", raw(hs, 0, 0, hsHead, uv(17)), "codecs, limit 16"},
		{"handshake empty codec", raw(hs, 0, 0, hsHead, uv(1), str(""), uv(0)), "invalid codec name"},
		{"handshake long codec", raw(hs, 0, 0, hsHead, uv(1), str(strings.Repeat("c", 65)), uv(0)), "limit 64"},
		{"handshake codec control char", raw(hs, 0, 0, hsHead, uv(1), str("a\tb"), uv(0)), "invalid codec name"},
		{"handshake codec non-ascii", raw(hs, 0, 0, hsHead, uv(1), str("é"), uv(0)), "invalid codec name"},
		{"handshake auth too big", raw(hs, 0, 0, hsHead, uv(0), uv(16<<10+1), rep(0, 16<<10+1)), "auth is 16385 bytes"},
		{"handshake auth truncated", raw(hs, 0, 0, hsHead, uv(0), uv(5), b(1)), "truncated auth"},
		{"handshake trailing", raw(hs, 0, 0, hsHead, uv(0), uv(0), b(0)), "trailing"},
		{"handshake overlong varint", raw(hs, 0, 0, hsHead, overlong), "malformed uvarint"},

		// handshake ack
		{"ack version", raw(ack, 0, 0, u16(2), ackHead[2:], uv(0)), "version 2"},
		{"ack small frame", raw(ack, 0, 0, u16(1), u32(0), u32(100), u32(0), u32(0), u32(0), uv(0), uv(0)), "below 4096"},
		{"ack truncated", raw(ack, 0, 0, u16(1), u32(0), u32(4096)), "truncated max metadata bytes"},
		{"ack too many services", raw(ack, 0, 0, ackHead, uv(65536)), "limit 65535"},
		{"ack empty service name", raw(ack, 0, 0, ackHead, uv(1), str(""), uv(0)), "empty service name"},
		{"ack long service name", raw(ack, 0, 0, ackHead, uv(1), str(strings.Repeat("s", 256)), uv(0)), "limit 255"},
		{"ack too many methods", raw(ack, 0, 0, ackHead, uv(1), str("s"), uv(65536)), "limit 65535"},
		{"ack method table above MaxAckEntries", raw(ack, 0, 0, ackHead, uv(1), str("s"), uv(protocol.MaxAckEntries),
			bytes.Repeat(str("m"), protocol.MaxAckEntries)), "more than 4096 services and methods"},
		{"ack services above MaxAckEntries", raw(ack, 0, 0, ackHead, uv(protocol.MaxAckEntries+1)), "more than the 4096 services and methods"},
		{"ack empty method name", raw(ack, 0, 0, ackHead, uv(1), str("s"), uv(1), str("")), "empty method name"},
		{"ack missing methods", raw(ack, 0, 0, ackHead, uv(1), str("s"), uv(2), str("m")), "truncated"},
		{"ack trailing", raw(ack, 0, 0, ackHead, uv(0), b(0)), "trailing"},
		{"ack 17 codecs", raw(ack, 0, 0, ackHead[:len(ackHead)-1], uv(17)), "limit 16"},

		// request
		{"request empty", raw(req, 0, 1), "truncated service id"},
		{"request service overflow", raw(req, 0, 1, uv(65536), uv(0)), "exceeds 65535"},
		{"request method overflow", raw(req, 0, 1, uv(0), uv(1<<20)), "exceeds 65535"},
		{"request overlong varint", raw(req, 0, 1, overlong, uv(0)), "malformed uvarint"},
		{"request varint overflow", raw(req, 0, 1, overflow, uv(0)), "malformed uvarint"},
		{"request budget missing", raw(req, protocol.FlagHasBudget, 1, uv(0), uv(0)), "truncated budget"},
		{"request budget 0", raw(req, protocol.FlagHasBudget, 1, uv(0), uv(0), uv(0)), "budget 0"},
		{"request budget overflow", raw(req, protocol.FlagHasBudget, 1, uv(0), uv(0), uv(1<<62)), "out of range"},
		{"request metadata missing", raw(req, protocol.FlagHasMetadata, 1, uv(0), uv(0)), "truncated entry count"},
		{"request metadata truncated", raw(req, protocol.FlagHasMetadata, 1, uv(0), uv(0), uv(1), str("k")), "truncated value"},
		{"request upper-case key", raw(req, protocol.FlagHasMetadata, 1, uv(0), uv(0), mdBlock("Key", "v")), "invalid key"},
		{"request empty key", raw(req, protocol.FlagHasMetadata, 1, uv(0), uv(0), mdBlock("", "v")), "invalid key"},
		{"request space in key", raw(req, protocol.FlagHasMetadata, 1, uv(0), uv(0), mdBlock("a b", "v")), "invalid key"},
		{"request long key", raw(req, protocol.FlagHasMetadata, 1, uv(0), uv(0), mdBlock(strings.Repeat("k", 129), "v")), "key is 129 bytes"},
		// Over the limits, a malformed block is still a violation.
		{"request too many entries, truncated", raw(req, protocol.FlagHasMetadata, 1, uv(0), uv(0), uv(65), mdBlock("k", "v")[1:]), "truncated key"},
		{"request too many entries, bad key", raw(req, protocol.FlagHasMetadata, 1, uv(0), uv(0), mdBlock(append(tooMany[:len(tooMany)-2:len(tooMany)-2], "K", "v")...)), "invalid key"},
		{"request metadata too big, truncated", raw(req, protocol.FlagHasMetadata, 1, uv(0), uv(0), uv(1), str("k"), uv(9000), []byte("vv")), "truncated value"},
		{"request metadata too big, long key", raw(req, protocol.FlagHasMetadata, 1, uv(0), uv(0), mdBlock("k", strings.Repeat("v", 9000), strings.Repeat("k", 129), "")), "key is 129 bytes"},
		{"request compressed empty", raw(req, protocol.FlagCompressed, 1, uv(0), uv(0)), "truncated codec id"},
		{"request compressed codec 0", raw(req, protocol.FlagCompressed, 1, uv(0), uv(0), b(0), uv(1), b(1)), "codec id 0"},
		{"request compressed no length", raw(req, protocol.FlagCompressed, 1, uv(0), uv(0), b(1)), "truncated original length"},
		{"request compressed too large", raw(req, protocol.FlagCompressed, 1, uv(0), uv(0), b(1), uv(64<<20+1), b(1)), "exceeds max decoded size"},
		{"request compressed no data", raw(req, protocol.FlagCompressed, 1, uv(0), uv(0), b(1), uv(10)), "without compressed data"},
		{"stream request without message has a body", raw(req, protocol.FlagStream, 1, uv(0), uv(0), b(0)), "stream without HasMessage has a 1-byte body"},
		{"stream request end without message has a body", raw(req, protocol.FlagStream|protocol.FlagEndStream|protocol.FlagHasMetadata, 1, uv(0), uv(0), mdBlock("k", "v"), b(7, 7)), "2-byte body"},
		{"stream request compressed message no data", raw(req, protocol.FlagStream|protocol.FlagHasMessage|protocol.FlagCompressed, 1, uv(0), uv(0), b(1), uv(10)), "without compressed data"},

		// response
		{"response metadata bad key", raw(rsp, protocol.FlagHasMetadata, 1, mdBlock("K", "")), "invalid key"},
		{"response metadata missing", raw(rsp, protocol.FlagHasMetadata, 1), "truncated entry count"},
		{"response compressed no data", raw(rsp, protocol.FlagCompressed, 1, b(3), uv(1)), "without compressed data"},

		// error
		{"error empty", raw(er, 0, 1), "truncated code"},
		{"error code OK", raw(er, 0, 1, b(0), str(""), str(""), uv(0)), "code 0"},
		{"error code 17", raw(er, 0, 1, b(17), str(""), str(""), uv(0)), "code 17"},
		{"error message not utf8", raw(er, 0, 1, b(2), str("\xff"), str(""), uv(0)), "UTF-8"},
		{"error message too long", raw(er, 0, 1, b(2), str(strings.Repeat("m", 4097)), str(""), uv(0)), "limit 4096"},
		{"error reason upper", raw(er, 0, 1, b(8), str(""), str("Queue"), uv(0)), "invalid reason"},
		{"error reason digit", raw(er, 0, 1, b(8), str(""), str("q1"), uv(0)), "invalid reason"},
		{"error reason too long", raw(er, 0, 1, b(8), str(""), str(strings.Repeat("r", 65)), uv(0)), "limit 64"},
		{"error retry missing", raw(er, 0, 1, b(8), str(""), str("")), "truncated retry-after"},
		{"error retry overflow", raw(er, 0, 1, b(8), str(""), str(""), uv(1<<63)), "out of range"},
		{"error trailing", raw(er, 0, 1, b(8), str(""), str(""), uv(0), b(0)), "trailing"},
		{"error metadata bad", raw(er, protocol.FlagHasMetadata, 0, b(8), str(""), str(""), uv(0), mdBlock("A", "")), "invalid key"},
		{"error metadata trailing", raw(er, protocol.FlagHasMetadata, 0, b(8), str(""), str(""), uv(0), mdBlock("a", ""), b(1)), "trailing"},

		// cancel
		{"cancel empty", raw(cnl, 0, 1), "truncated reason"},
		{"cancel reason 0", raw(cnl, 0, 1, b(0)), "unknown reason 0"},
		{"cancel reason 3", raw(cnl, 0, 1, b(3)), "unknown reason 3"},
		{"cancel trailing", raw(cnl, 0, 1, b(1, 0)), "trailing"},

		// message
		{"message metadata missing", raw(msg, protocol.FlagHasMetadata, 1), "truncated entry count"},
		{"message metadata bad key", raw(msg, protocol.FlagHasMetadata, 1, mdBlock("K", "")), "invalid key"},
		{"message metadata truncated", raw(msg, protocol.FlagHasMetadata|protocol.FlagEndStream, 1, uv(1), str("k")), "truncated value"},
		{"message too many entries, truncated", raw(msg, protocol.FlagHasMetadata, 1, uv(65), mdBlock("k", "v")[1:]), "truncated key"},
		{"message compressed empty", raw(msg, protocol.FlagCompressed, 1), "truncated codec id"},
		{"message compressed codec 0", raw(msg, protocol.FlagCompressed, 1, b(0), uv(1), b(1)), "codec id 0"},
		{"message compressed no length", raw(msg, protocol.FlagCompressed|protocol.FlagEndStream, 1, b(1)), "truncated original length"},
		{"message compressed overlong length", raw(msg, protocol.FlagCompressed, 1, b(1), overlong, b(1)), "malformed uvarint"},
		{"message compressed too large", raw(msg, protocol.FlagCompressed, 1, b(1), uv(64<<20+1), b(1)), "exceeds max decoded size"},
		{"message compressed no data", raw(msg, protocol.FlagCompressed|protocol.FlagHasMetadata, 1, mdBlock("k", "v"), b(1), uv(10)), "without compressed data"},

		// end
		{"end trailing without metadata", raw(end, 0, 1, b(0)), "end: 1 trailing bytes"},
		{"end metadata missing", raw(end, protocol.FlagHasMetadata, 1), "truncated entry count"},
		{"end metadata bad key", raw(end, protocol.FlagHasMetadata, 1, mdBlock("a b", "")), "invalid key"},
		{"end metadata trailing", raw(end, protocol.FlagHasMetadata, 1, mdBlock("a", "1"), b(1, 2)), "end: 2 trailing bytes"},
		{"end too many entries, bad key", raw(end, protocol.FlagHasMetadata, 1, mdBlock(append(tooMany[:len(tooMany)-2:len(tooMany)-2], "K", "v")...)), "invalid key"},

		// window update
		{"window update empty", raw(wu, 0, 0), "truncated returned bytes"},
		{"window update no growth", raw(wu, 0, 1, uv(1)), "truncated window growth"},
		{"window update both 0", raw(wu, 0, 0, uv(0), uv(0)), "both 0"},
		{"window update both 0, non-minimal", raw(wu, 0, 5, b(0x80, 0x00), b(0x80, 0x80, 0x00)), "both 0"},
		{"window update returned over max", raw(wu, 0, 0, uv(1<<31), uv(0)), "returned 2147483648 / growth 0 exceeds MaxWindow 2147483647"},
		{"window update growth over max", raw(wu, 0, 1, uv(0), uv(1<<31)), "exceeds MaxWindow"},
		{"window update growth 2^32", raw(wu, 0, 1, uv(1), uv(1<<32)), "exceeds MaxWindow"},
		{"window update overlong", raw(wu, 0, 1, overlong, uv(1)), "malformed uvarint returned bytes"},
		{"window update overflow", raw(wu, 0, 1, uv(1), overflow), "malformed uvarint window growth"},
		{"window update trailing", raw(wu, 0, 0, uv(1), uv(1), b(0)), "window update: 1 trailing bytes"},

		// goaway
		{"goaway truncated", raw(ga, 0, 0, u32(1)), "truncated last id"},
		{"goaway code 17", raw(ga, 0, 0, u64(1), b(17), str("")), "code 17"},
		{"goaway message not utf8", raw(ga, 0, 0, u64(1), b(0), str("a\xc0")), "UTF-8"},
		{"goaway message too long", raw(ga, 0, 0, u64(1), b(0), str(strings.Repeat("m", 4097))), "limit 4096"},
		{"goaway trailing", raw(ga, 0, 0, u64(1), b(0), str(""), b(0)), "trailing"},
	}
	lim := protocol.DefaultLimits()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := decode(tt.frame, lim)
			require.Error(t, err)
			var pe *protocol.ProtocolError
			require.ErrorAs(t, err, &pe)
			assert.True(t, protocol.IsViolation(err))
			assert.Contains(t, pe.Reason, tt.reason)
			assert.True(t, strings.HasPrefix(err.Error(), "sluice/protocol: violation: "), err.Error())
		})
	}
}

func TestParseWrongFrame(t *testing.T) {
	lim := protocol.DefaultLimits()
	h := protocol.Header{Type: protocol.FrameResponse, ID: 1}
	err := protocol.ParseRequest(h, nil, lim, new(protocol.Request))
	assert.True(t, protocol.IsViolation(err))
	// payload length must match the header
	h = protocol.Header{Type: protocol.FrameRequest, ID: 1, Length: 3}
	err = protocol.ParseRequest(h, []byte{0, 0}, lim, new(protocol.Request))
	assert.ErrorContains(t, err, "header says 3")
	_, err = protocol.ParsePing(protocol.Header{Type: protocol.FrameCancel}, make([]byte, 8))
	assert.True(t, protocol.IsViolation(err))
}

func TestUnsupportedVersion(t *testing.T) {
	for _, v := range []uint16{0, 2, 0xFFFF} {
		frame := raw(protocol.FrameHandshake, 0, 0, u16(v), []byte("whatever follows"))
		h, payload := split(t, frame)
		var hs protocol.Handshake
		err := protocol.ParseHandshake(h, payload, protocol.DefaultLimits(), &hs)
		require.ErrorIs(t, err, protocol.ErrUnsupportedVersion)
		assert.False(t, protocol.IsViolation(err))
		assert.Equal(t, v, hs.Version)
	}
}

func TestUnknownCapabilitiesIgnored(t *testing.T) {
	frame := raw(protocol.FrameHandshake, 0, 0, u16(1), u32(0xFFFFFFFF), u32(4096), uv(0), uv(0))
	h, payload := split(t, frame)
	var hs protocol.Handshake
	require.NoError(t, protocol.ParseHandshake(h, payload, protocol.DefaultLimits(), &hs))
	assert.True(t, hs.Capabilities.Has(protocol.CapCancel|protocol.CapKeepalive))
}

func TestMetadataLimitsConfigurable(t *testing.T) {
	lim := protocol.DefaultLimits()
	lim.MaxMetadataEntries = 2
	lim.MaxMetadataBytes = 16
	var m protocol.Metadata
	_, err := protocol.ParseMetadata(mdBlock("a", "1", "b", "2"), lim, &m)
	require.NoError(t, err)
	_, err = protocol.ParseMetadata(mdBlock("a", "1", "b", "2", "c", "3"), lim, &m)
	assert.ErrorContains(t, err, "3 entries, limit 2 (MaxMetadataEntries)")
	assert.Equal(t, 0, m.Len(), "a failed parse leaves the metadata empty")
	_, err = protocol.ParseMetadata(mdBlock("a", strings.Repeat("v", 13)), lim, &m) // 1+2+14 = 17 bytes
	assert.ErrorContains(t, err, "metadata block is 17 bytes, limit 16 (MaxMetadataBytes)")
	_, err = protocol.ParseMetadata(mdBlock("a", strings.Repeat("v", 12)), lim, &m) // 16 bytes
	assert.NoError(t, err)
}

func TestAppendRejectsInvalid(t *testing.T) {
	tests := []struct {
		name string
		fn   func() ([]byte, error)
	}{
		{"request id 0", func() ([]byte, error) { return protocol.AppendRequest(nil, 0, &protocol.Request{}) }},
		{"request one-way cancellable", func() ([]byte, error) {
			return protocol.AppendRequest(nil, 1, &protocol.Request{OneWay: true, Cancellable: true})
		}},
		{"request stream one-way", func() ([]byte, error) {
			return protocol.AppendRequest(nil, 1, &protocol.Request{Stream: true, OneWay: true})
		}},
		{"request has-message without stream", func() ([]byte, error) {
			return protocol.AppendRequest(nil, 1, &protocol.Request{HasMessage: true})
		}},
		{"request end-stream without stream", func() ([]byte, error) {
			return protocol.AppendRequest(nil, 1, &protocol.Request{EndStream: true, Body: []byte("x")})
		}},
		{"request stream body without message", func() ([]byte, error) {
			return protocol.AppendRequest(nil, 1, &protocol.Request{Stream: true, Body: []byte("x")})
		}},
		{"request stream compressed without message", func() ([]byte, error) {
			return protocol.AppendRequest(nil, 1, &protocol.Request{Stream: true, EndStream: true, Compressed: true, CodecID: 1, Body: []byte("x")})
		}},
		{"request zero budget", func() ([]byte, error) { return protocol.AppendRequest(nil, 1, &protocol.Request{HasBudget: true}) }},
		{"request sub-µs budget", func() ([]byte, error) {
			return protocol.AppendRequest(nil, 1, &protocol.Request{HasBudget: true, Budget: 999})
		}},
		{"request codec 0", func() ([]byte, error) {
			return protocol.AppendRequest(nil, 1, &protocol.Request{Compressed: true, Body: []byte{1}})
		}},
		{"request compressed empty", func() ([]byte, error) {
			return protocol.AppendRequest(nil, 1, &protocol.Request{Compressed: true, CodecID: 1})
		}},
		{"response id 0", func() ([]byte, error) { return protocol.AppendResponse(nil, 0, &protocol.Response{}) }},
		{"response compressed empty", func() ([]byte, error) {
			return protocol.AppendResponse(nil, 1, &protocol.Response{Compressed: true, CodecID: 1})
		}},
		{"error code OK", func() ([]byte, error) { return protocol.AppendError(nil, 1, &protocol.ErrorFrame{}) }},
		{"error code 17", func() ([]byte, error) { return protocol.AppendError(nil, 1, &protocol.ErrorFrame{Code: 17}) }},
		{"error message utf8", func() ([]byte, error) {
			return protocol.AppendError(nil, 1, &protocol.ErrorFrame{Code: 2, Message: "\xff"})
		}},
		{"error message long", func() ([]byte, error) {
			return protocol.AppendError(nil, 1, &protocol.ErrorFrame{Code: 2, Message: strings.Repeat("m", 4097)})
		}},
		{"error reason", func() ([]byte, error) {
			return protocol.AppendError(nil, 1, &protocol.ErrorFrame{Code: 8, Reason: "Queue-Full"})
		}},
		{"error reason long", func() ([]byte, error) {
			return protocol.AppendError(nil, 1, &protocol.ErrorFrame{Code: 8, Reason: strings.Repeat("r", 65)})
		}},
		{"error negative retry", func() ([]byte, error) {
			return protocol.AppendError(nil, 1, &protocol.ErrorFrame{Code: 8, RetryAfter: -1})
		}},
		{"cancel id 0", func() ([]byte, error) { return protocol.AppendCancel(nil, 0, protocol.CancelCaller) }},
		{"message id 0", func() ([]byte, error) { return protocol.AppendMessage(nil, 0, &protocol.Message{}) }},
		{"message codec 0", func() ([]byte, error) {
			return protocol.AppendMessage(nil, 1, &protocol.Message{Compressed: true, Body: []byte{1}})
		}},
		{"message compressed empty", func() ([]byte, error) {
			return protocol.AppendMessage(nil, 1, &protocol.Message{Compressed: true, CodecID: 1, EndStream: true})
		}},
		{"end id 0", func() ([]byte, error) { return protocol.AppendEnd(nil, 0, &protocol.End{}) }},
		{"window update both 0", func() ([]byte, error) { return protocol.AppendWindowUpdate(nil, 1, &protocol.WindowUpdate{}) }},
		{"window update returned over max", func() ([]byte, error) {
			return protocol.AppendWindowUpdate(nil, 0, &protocol.WindowUpdate{Returned: protocol.MaxWindow + 1})
		}},
		{"window update growth over max", func() ([]byte, error) {
			return protocol.AppendWindowUpdate(nil, 0, &protocol.WindowUpdate{Returned: 1, Growth: math.MaxUint32})
		}},
		{"cancel reason", func() ([]byte, error) { return protocol.AppendCancel(nil, 1, 3) }},
		{"goaway code", func() ([]byte, error) { return protocol.AppendGoAway(nil, &protocol.GoAway{Code: 17}) }},
		{"goaway message", func() ([]byte, error) { return protocol.AppendGoAway(nil, &protocol.GoAway{Message: "\xc0"}) }},
		{"handshake version 0", func() ([]byte, error) {
			return protocol.AppendHandshake(nil, &protocol.Handshake{MaxFrameSize: 4096})
		}},
		{"handshake frame size", func() ([]byte, error) {
			return protocol.AppendHandshake(nil, &protocol.Handshake{Version: 1, MaxFrameSize: 4095})
		}},
		{"handshake codec", func() ([]byte, error) {
			return protocol.AppendHandshake(nil, &protocol.Handshake{Version: 1, MaxFrameSize: 4096, Codecs: []string{""}})
		}},
		{"handshake 17 codecs", func() ([]byte, error) {
			return protocol.AppendHandshake(nil, &protocol.Handshake{Version: 1, MaxFrameSize: 4096, Codecs: append(make16(), "x")})
		}},
		{"ack version", func() ([]byte, error) {
			return protocol.AppendHandshakeAck(nil, &protocol.HandshakeAck{Version: 2, MaxFrameSize: 4096})
		}},
		{"ack frame size", func() ([]byte, error) {
			return protocol.AppendHandshakeAck(nil, &protocol.HandshakeAck{Version: 1})
		}},
		{"ack keepalive", func() ([]byte, error) {
			return protocol.AppendHandshakeAck(nil, &protocol.HandshakeAck{Version: 1, MaxFrameSize: 4096, KeepaliveInterval: -1e6})
		}},
		{"ack service name", func() ([]byte, error) {
			return protocol.AppendHandshakeAck(nil, &protocol.HandshakeAck{Version: 1, MaxFrameSize: 4096,
				Services: []protocol.ServiceInfo{{Name: ""}}})
		}},
		{"ack method name", func() ([]byte, error) {
			return protocol.AppendHandshakeAck(nil, &protocol.HandshakeAck{Version: 1, MaxFrameSize: 4096,
				Services: []protocol.ServiceInfo{{Name: "s", Methods: []string{strings.Repeat("m", 256)}}}})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := tt.fn()
			assert.ErrorIs(t, err, protocol.ErrInvalidValue)
			assert.False(t, protocol.IsViolation(err))
			assert.Empty(t, out)
		})
	}
}

// TestMetadataOverLimitIsNotAViolation: a well-formed block over the
// receiver's MaxMetadataEntries or MaxMetadataBytes is a
// *MetadataLimitError, not a violation, and the rest of the frame is
// decoded, so that the receiver can fail only that call.
func TestMetadataOverLimitIsNotAViolation(t *testing.T) {
	tooMany := make([]string, 0, 130)
	for range 65 {
		tooMany = append(tooMany, "k", "v")
	}
	req, rsp, er := protocol.FrameRequest, protocol.FrameResponse, protocol.FrameError
	tests := []struct {
		name    string
		frame   []byte
		entries int
		bytes   int
		reason  string
	}{
		{"request too many entries", raw(req, protocol.FlagHasMetadata|protocol.FlagOneWay, 1, uv(1), uv(2), mdBlock(tooMany...), []byte("body")), 65, 1 + 65*4, "metadata has 65 entries, limit 64 (MaxMetadataEntries)"},
		{"request metadata too big", raw(req, protocol.FlagHasMetadata|protocol.FlagOneWay, 1, uv(1), uv(2), mdBlock("k", strings.Repeat("v", 8190)), []byte("body")), 1, 8195, "metadata block is 8195 bytes, limit 8192 (MaxMetadataBytes)"},
		{"request metadata value too big", raw(req, protocol.FlagHasMetadata|protocol.FlagOneWay, 1, uv(1), uv(2), mdBlock("a", "", "k", strings.Repeat("v", 9000)), []byte("body")), 2, 9008, "metadata block is 9008 bytes, limit 8192"},
		{"response too many entries", raw(rsp, protocol.FlagHasMetadata, 1, mdBlock(tooMany...), []byte("body")), 65, 261, "65 entries"},
		{"error too many entries", raw(er, protocol.FlagHasMetadata, 1, b(5), str("gone"), str(""), uv(0), mdBlock(tooMany...)), 65, 261, "65 entries"},
		{"message too many entries", raw(protocol.FrameMessage, protocol.FlagHasMetadata, 1, mdBlock(tooMany...), []byte("body")), 65, 261, "65 entries"},
		{"message metadata too big", raw(protocol.FrameMessage, protocol.FlagHasMetadata|protocol.FlagCompressed, 1, mdBlock("k", strings.Repeat("v", 8190)), b(1), uv(4), []byte("body")), 1, 8195, "metadata block is 8195 bytes, limit 8192"},
		{"end too many entries", raw(protocol.FrameEnd, protocol.FlagHasMetadata, 1, mdBlock(tooMany...)), 65, 261, "65 entries"},
		{"end metadata too big", raw(protocol.FrameEnd, protocol.FlagHasMetadata, 1, mdBlock("k", strings.Repeat("v", 8190))), 1, 8195, "limit 8192 (MaxMetadataBytes)"},
	}
	lim := protocol.DefaultLimits()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, p := split(t, tt.frame)
			var err error
			switch h.Type {
			case protocol.FrameRequest:
				var r protocol.Request
				err = protocol.ParseRequest(h, p, lim, &r)
				assert.Equal(t, uint16(1), r.Service)
				assert.Equal(t, uint16(2), r.Method)
				assert.True(t, r.OneWay)
				assert.Equal(t, "body", string(r.Body))
				assert.Equal(t, 0, r.Metadata.Len())
			case protocol.FrameResponse:
				var r protocol.Response
				err = protocol.ParseResponse(h, p, lim, &r)
				assert.Equal(t, "body", string(r.Body))
				assert.Equal(t, 0, r.Metadata.Len())
			case protocol.FrameMessage:
				var m protocol.Message
				err = protocol.ParseMessage(h, p, lim, &m)
				assert.Equal(t, "body", string(m.Body))
				assert.Equal(t, h.Flags.Has(protocol.FlagCompressed), m.Compressed)
				assert.Equal(t, 0, m.Metadata.Len())
			case protocol.FrameEnd:
				var e protocol.End
				err = protocol.ParseEnd(h, p, lim, &e)
				assert.Equal(t, 0, e.Metadata.Len())
			default:
				var e protocol.ErrorFrame
				err = protocol.ParseError(h, p, lim, &e)
				assert.Equal(t, protocol.CodeNotFound, e.Code)
				assert.Equal(t, "gone", e.Message)
				assert.Equal(t, 0, e.Metadata.Len())
			}
			require.Error(t, err)
			assert.False(t, protocol.IsViolation(err), err.Error())
			var le *protocol.MetadataLimitError
			require.ErrorAs(t, err, &le)
			assert.Equal(t, tt.entries, le.Entries)
			assert.Equal(t, tt.bytes, le.Bytes)
			assert.Equal(t, uint32(64), le.MaxEntries)
			assert.Equal(t, uint32(8192), le.MaxBytes)
			assert.Contains(t, err.Error(), tt.reason)
		})
	}
}
