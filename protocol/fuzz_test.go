package protocol_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"
	"testing/iotest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/protocol"
)

// Each fuzz target checks that its decoder never panics and, on success,
// that encoding the decoded value and decoding it again yields the same
// value.

// fuzzHeader validates a fuzzer-chosen header the way a Reader would and
// reports whether the frame would reach the payload decoder.
func fuzzHeader(t protocol.FrameType, flags uint16, id uint64, payload []byte) (protocol.Header, bool) {
	b := protocol.AppendHeader(nil, protocol.Header{Type: t, Flags: protocol.Flags(flags), Length: uint32(len(payload)), ID: id})
	h, err := protocol.ParseHeader(b, protocol.DefaultLimits().MaxFrameSize)
	return h, err == nil && uint64(len(payload)) == uint64(h.Length)
}

func payloadOf(t testing.TB, frame []byte) (uint16, []byte) {
	h, p := split(t, frame)
	return uint16(h.Flags), p
}

func FuzzParseHeader(f *testing.F) {
	f.Add(protocol.AppendPing(nil, [8]byte{}))
	f.Add(must(f)(protocol.AppendRequest(nil, 1, sampleRequest(f)))[:protocol.HeaderSize])
	f.Add(must(f)(protocol.AppendError(nil, 0, &protocol.ErrorFrame{Code: protocol.CodeInternal}))[:protocol.HeaderSize])
	f.Add(make([]byte, 16))
	for _, h := range []protocol.Header{
		{Type: protocol.FrameRequest, Flags: protocol.FlagStream | protocol.FlagHasMessage | protocol.FlagEndStream | protocol.FlagCompressed, ID: 1},
		{Type: protocol.FrameMessage, Flags: protocol.FlagCompressed | protocol.FlagHasMetadata | protocol.FlagEndStream, ID: 2, Length: 9},
		{Type: protocol.FrameEnd, Flags: protocol.FlagHasMetadata, ID: 3},
		{Type: protocol.FrameWindowUpdate, Length: 2},
	} {
		f.Add(protocol.AppendHeader(nil, h))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := protocol.ParseHeader(data, protocol.DefaultLimits().MaxFrameSize)
		if err != nil {
			require.True(t, protocol.IsViolation(err))
			return
		}
		assert.Equal(t, data[:protocol.HeaderSize], protocol.AppendHeader(nil, h))
	})
}

func FuzzParseHandshake(f *testing.F) {
	for _, hs := range []protocol.Handshake{
		{Version: 1, MaxFrameSize: 4096},
		{Version: 1, Capabilities: 15, MaxFrameSize: 1 << 20, Codecs: []string{"proto", "json"}, Auth: []byte("secret")},
	} {
		_, p := payloadOf(f, must(f)(protocol.AppendHandshake(nil, &hs)))
		f.Add(p)
	}
	lim := protocol.DefaultLimits()
	f.Fuzz(func(t *testing.T, payload []byte) {
		h, ok := fuzzHeader(protocol.FrameHandshake, 0, 0, payload)
		if !ok {
			return
		}
		var hs protocol.Handshake
		if err := protocol.ParseHandshake(h, payload, lim, &hs); err != nil {
			require.True(t, protocol.IsViolation(err) || errors.Is(err, protocol.ErrUnsupportedVersion), err)
			return
		}
		h2, p2 := split(t, must(t)(protocol.AppendHandshake(nil, &hs)))
		var again protocol.Handshake
		require.NoError(t, protocol.ParseHandshake(h2, p2, lim, &again))
		assert.Equal(t, hs, again)
	})
}

func FuzzParseHandshakeAck(f *testing.F) {
	for _, a := range []protocol.HandshakeAck{
		{Version: 1, MaxFrameSize: 4096},
		{Version: 1, Capabilities: 9, MaxFrameSize: 1 << 22, MaxMetadataBytes: 8192, MaxConcurrentCalls: 64,
			KeepaliveInterval: 10 * time.Second, Codecs: []string{"proto"},
			Services: []protocol.ServiceInfo{{Name: "a.A", Methods: []string{"X", "Y"}}, {Name: "b"}}},
	} {
		_, p := payloadOf(f, must(f)(protocol.AppendHandshakeAck(nil, &a)))
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		h, ok := fuzzHeader(protocol.FrameHandshakeAck, 0, 0, payload)
		if !ok {
			return
		}
		var a protocol.HandshakeAck
		if err := protocol.ParseHandshakeAck(h, payload, &a); err != nil {
			require.True(t, protocol.IsViolation(err), err)
			return
		}
		h2, p2 := split(t, must(t)(protocol.AppendHandshakeAck(nil, &a)))
		var again protocol.HandshakeAck
		require.NoError(t, protocol.ParseHandshakeAck(h2, p2, &again))
		assert.Equal(t, a, again)
	})
}

func FuzzParseRequest(f *testing.F) {
	for _, r := range []*protocol.Request{
		{},
		sampleRequest(f),
		{OneWay: true, Service: 65535, Method: 65535, Body: []byte("b")},
		{Compressed: true, CodecID: 1, OriginalLength: 100, Body: []byte{1, 2}, Metadata: md(f, "k", "v")},
		{Stream: true, Metadata: md(f, "k", "v"), HasBudget: true, Budget: time.Second},
		{Stream: true, HasMessage: true, EndStream: true, Compressed: true, CodecID: 2, OriginalLength: 7, Body: []byte{3}},
	} {
		fl, p := payloadOf(f, must(f)(protocol.AppendRequest(nil, 1, r)))
		f.Add(fl, p)
	}
	lim := protocol.DefaultLimits()
	f.Fuzz(func(t *testing.T, flags uint16, payload []byte) {
		h, ok := fuzzHeader(protocol.FrameRequest, flags, 1, payload)
		if !ok {
			return
		}
		var r protocol.Request
		if err := protocol.ParseRequest(h, payload, lim, &r); err != nil {
			requireViolationOrLimit(t, err)
			return
		}
		h2, p2 := split(t, must(t)(protocol.AppendRequest(nil, 1, &r)))
		var again protocol.Request
		require.NoError(t, protocol.ParseRequest(h2, p2, lim, &again))
		assert.Equal(t, viewRequest(&r), viewRequest(&again))
	})
}

func FuzzParseResponse(f *testing.F) {
	for _, r := range []*protocol.Response{
		{},
		{Body: []byte("hello"), Metadata: md(f, "a", "1", "a", "2")},
		{Compressed: true, CodecID: 7, OriginalLength: 1 << 20, Body: []byte{0}},
	} {
		fl, p := payloadOf(f, must(f)(protocol.AppendResponse(nil, 1, r)))
		f.Add(fl, p)
	}
	lim := protocol.DefaultLimits()
	f.Fuzz(func(t *testing.T, flags uint16, payload []byte) {
		h, ok := fuzzHeader(protocol.FrameResponse, flags, 1, payload)
		if !ok {
			return
		}
		var r protocol.Response
		if err := protocol.ParseResponse(h, payload, lim, &r); err != nil {
			requireViolationOrLimit(t, err)
			return
		}
		h2, p2 := split(t, must(t)(protocol.AppendResponse(nil, 1, &r)))
		var again protocol.Response
		require.NoError(t, protocol.ParseResponse(h2, p2, lim, &again))
		assert.Equal(t, viewResponse(&r), viewResponse(&again))
	})
}

func FuzzParseMessage(f *testing.F) {
	for _, m := range []*protocol.Message{
		{},
		{Body: []byte("hello"), EndStream: true},
		{Metadata: md(f, "a", "1", "a", "2"), Body: []byte("x")},
		{Compressed: true, CodecID: 7, OriginalLength: 1 << 20, Body: []byte{0}, EndStream: true, Metadata: md(f, "k", "")},
	} {
		fl, p := payloadOf(f, must(f)(protocol.AppendMessage(nil, 1, m)))
		f.Add(fl, p)
	}
	lim := protocol.DefaultLimits()
	f.Fuzz(func(t *testing.T, flags uint16, payload []byte) {
		h, ok := fuzzHeader(protocol.FrameMessage, flags, 1, payload)
		if !ok {
			return
		}
		var m protocol.Message
		if err := protocol.ParseMessage(h, payload, lim, &m); err != nil {
			requireViolationOrLimit(t, err)
			assert.Zero(t, m.Metadata.Len())
			return
		}
		h2, p2 := split(t, must(t)(protocol.AppendMessage(nil, 1, &m)))
		var again protocol.Message
		require.NoError(t, protocol.ParseMessage(h2, p2, lim, &again))
		assert.Equal(t, viewMessage(&m), viewMessage(&again))
	})
}

func FuzzParseEnd(f *testing.F) {
	for _, e := range []*protocol.End{{}, {Metadata: md(f, "t", "1", "t", "2", "grpc-status-details", "\x00")}} {
		fl, p := payloadOf(f, must(f)(protocol.AppendEnd(nil, 1, e)))
		f.Add(fl, p)
	}
	lim := protocol.DefaultLimits()
	f.Fuzz(func(t *testing.T, flags uint16, payload []byte) {
		h, ok := fuzzHeader(protocol.FrameEnd, flags, 1, payload)
		if !ok {
			return
		}
		var e protocol.End
		if err := protocol.ParseEnd(h, payload, lim, &e); err != nil {
			requireViolationOrLimit(t, err)
			assert.Zero(t, e.Metadata.Len())
			return
		}
		h2, p2 := split(t, must(t)(protocol.AppendEnd(nil, 1, &e)))
		var again protocol.End
		require.NoError(t, protocol.ParseEnd(h2, p2, lim, &again))
		assert.Equal(t, entries(&e.Metadata), entries(&again.Metadata))
	})
}

func FuzzParseWindowUpdate(f *testing.F) {
	for _, w := range []*protocol.WindowUpdate{{Returned: 1}, {Growth: 1 << 20}, {Returned: protocol.MaxWindow, Growth: protocol.MaxWindow}} {
		_, p := payloadOf(f, must(f)(protocol.AppendWindowUpdate(nil, 0, w)))
		f.Add(uint64(0), p)
	}
	f.Add(uint64(3), []byte{0, 0})
	f.Add(uint64(3), binary.AppendUvarint([]byte{1}, 1<<31))
	f.Fuzz(func(t *testing.T, id uint64, payload []byte) {
		h, ok := fuzzHeader(protocol.FrameWindowUpdate, 0, id, payload)
		if !ok {
			return
		}
		var w protocol.WindowUpdate
		if err := protocol.ParseWindowUpdate(h, payload, &w); err != nil {
			require.True(t, protocol.IsViolation(err), err)
			return
		}
		require.True(t, w.Returned > 0 || w.Growth > 0)
		require.LessOrEqual(t, w.Returned, uint32(protocol.MaxWindow))
		require.LessOrEqual(t, w.Growth, uint32(protocol.MaxWindow))
		h2, p2 := split(t, must(t)(protocol.AppendWindowUpdate(nil, id, &w)))
		assert.Equal(t, id, h2.ID)
		var again protocol.WindowUpdate
		require.NoError(t, protocol.ParseWindowUpdate(h2, p2, &again))
		assert.Equal(t, w, again)
	})
}

func FuzzParseError(f *testing.F) {
	for _, e := range []*protocol.ErrorFrame{
		{Code: protocol.CodeResourceExhausted, Message: "busy", Reason: "queue_full", RetryAfter: time.Second},
		{Code: protocol.CodeInternal, Metadata: md(f, "k", "v")},
	} {
		fl, p := payloadOf(f, must(f)(protocol.AppendError(nil, 1, e)))
		f.Add(fl, uint64(1), p)
	}
	lim := protocol.DefaultLimits()
	f.Fuzz(func(t *testing.T, flags uint16, id uint64, payload []byte) {
		h, ok := fuzzHeader(protocol.FrameError, flags, id, payload)
		if !ok {
			return
		}
		var e protocol.ErrorFrame
		if err := protocol.ParseError(h, payload, lim, &e); err != nil {
			requireViolationOrLimit(t, err)
			return
		}
		h2, p2 := split(t, must(t)(protocol.AppendError(nil, id, &e)))
		assert.Equal(t, id, h2.ID)
		var again protocol.ErrorFrame
		require.NoError(t, protocol.ParseError(h2, p2, lim, &again))
		assert.Equal(t, viewError(&e), viewError(&again))
	})
}

func FuzzParseCancel(f *testing.F) {
	f.Add([]byte{1})
	f.Add([]byte{2})
	f.Fuzz(func(t *testing.T, payload []byte) {
		h, ok := fuzzHeader(protocol.FrameCancel, 0, 5, payload)
		if !ok {
			return
		}
		reason, err := protocol.ParseCancel(h, payload)
		if err != nil {
			require.True(t, protocol.IsViolation(err), err)
			return
		}
		h2, p2 := split(t, must(t)(protocol.AppendCancel(nil, 5, reason)))
		again, err := protocol.ParseCancel(h2, p2)
		require.NoError(t, err)
		assert.Equal(t, reason, again)
	})
}

func FuzzParseGoAway(f *testing.F) {
	for _, g := range []*protocol.GoAway{{}, {LastID: 99, Code: protocol.CodeUnavailable, Message: "draining"}} {
		_, p := payloadOf(f, must(f)(protocol.AppendGoAway(nil, g)))
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		h, ok := fuzzHeader(protocol.FrameGoAway, 0, 0, payload)
		if !ok {
			return
		}
		var g protocol.GoAway
		if err := protocol.ParseGoAway(h, payload, &g); err != nil {
			require.True(t, protocol.IsViolation(err), err)
			return
		}
		h2, p2 := split(t, must(t)(protocol.AppendGoAway(nil, &g)))
		var again protocol.GoAway
		require.NoError(t, protocol.ParseGoAway(h2, p2, &again))
		assert.Equal(t, g, again)
	})
}

func FuzzParseMetadata(f *testing.F) {
	f.Add([]byte{0})
	f.Add(mdBlock("a", "1", "a", "2", "trace-id", "xyz"))
	f.Add(append(mdBlock("k", ""), "trailing body"...))
	lim := protocol.DefaultLimits()
	f.Fuzz(func(t *testing.T, data []byte) {
		var m protocol.Metadata
		n, err := protocol.ParseMetadata(data, lim, &m)
		if err != nil {
			requireViolationOrLimit(t, err)
			assert.Zero(t, m.Len())
			var le *protocol.MetadataLimitError
			if errors.As(err, &le) {
				assert.Equal(t, le.Bytes, n)
				assert.LessOrEqual(t, n, len(data))
				assert.True(t, le.Entries > int(lim.MaxMetadataEntries) || le.Bytes > int(lim.MaxMetadataBytes))
			}
			return
		}
		require.LessOrEqual(t, n, len(data))
		require.LessOrEqual(t, m.EncodedLen(), n)
		es := make([]protocol.MetadataEntry, m.Len())
		for i := range es {
			k, v := m.At(i)
			es[i] = protocol.MetadataEntry{Key: string(k), Value: v}
		}
		block, err := protocol.AppendMetadata(nil, es)
		require.NoError(t, err)
		var again protocol.Metadata
		n2, err := protocol.ParseMetadata(block, lim, &again)
		require.NoError(t, err)
		assert.Equal(t, len(block), n2)
		assert.Equal(t, entries(&m), entries(&again))
	})
}

func FuzzReader(f *testing.F) {
	s, _, _ := stream(f)
	f.Add(s)
	ss, _, _ := streamFrames(f)
	f.Add(ss)
	f.Add(must(f)(protocol.AppendHandshake(nil, &protocol.Handshake{Version: 1, MaxFrameSize: 4096})))
	f.Add(must(f)(protocol.AppendError(nil, 0, &protocol.ErrorFrame{Code: protocol.CodeUnauthenticated})))
	f.Add([]byte{})
	lim := protocol.DefaultLimits()
	lim.MaxFrameSize = protocol.MinFrameSize
	f.Fuzz(func(t *testing.T, data []byte) {
		// A read-ahead of 16 bytes sends most payloads through the
		// growing buffer; the default one returns most from the
		// read-ahead; a one-byte-at-a-time source splits every read.
		fuzzReader(t, protocol.NewReaderSize(bytes.NewReader(data), 16, lim), data, lim)
		fuzzReader(t, protocol.NewReader(bytes.NewReader(data), lim), data, lim)
		fuzzReader(t, protocol.NewReader(iotest.OneByteReader(bytes.NewReader(data)), lim), data, lim)
	})
}

// fuzzReader reads data's frames with r and checks each against data.
func fuzzReader(t *testing.T, r *protocol.Reader, data []byte, lim protocol.Limits) {
	t.Helper()
	{
		consumed := 0
		for {
			h, p, err := r.ReadFrame()
			if err != nil {
				ok := err == io.EOF || err == io.ErrUnexpectedEOF || protocol.IsViolation(err)
				require.True(t, ok, err)
				if err == io.EOF {
					assert.Equal(t, len(data), consumed)
				}
				return
			}
			require.Len(t, p, int(h.Length))
			consumed += protocol.HeaderSize + len(p)
			require.Equal(t, data[consumed-len(p):consumed], p, "the payload is the stream's bytes")
			err = decode(data[consumed-len(p)-protocol.HeaderSize:consumed], lim)
			if err != nil && !errors.Is(err, protocol.ErrUnsupportedVersion) {
				requireViolationOrLimit(t, err)
			}
		}
	}
}

// requireViolationOrLimit: a decoder fails only with a violation or, for
// well-formed metadata over the limits, a *MetadataLimitError.
func requireViolationOrLimit(t *testing.T, err error) {
	t.Helper()
	var le *protocol.MetadataLimitError
	require.True(t, protocol.IsViolation(err) || errors.As(err, &le), err)
}
