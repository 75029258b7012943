package server_test

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/codecs"
	"github.com/sluicerpc/sluice/kernel/governor"
	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/server"
)

// compressedMsg sends a compressed Message on stream id.
func (c *rawClient) compressedMsg(id uint64, codecID uint8, z []byte, orig int, end bool) {
	c.t.Helper()
	f, err := protocol.AppendMessage(nil, id, &protocol.Message{Body: z, Compressed: true, CodecID: codecID, OriginalLength: uint32(orig), EndStream: end})
	require.NoError(c.t, err)
	c.write(f)
}

// TestCompressedStreamMessages: compressed messages, the opening one
// included, are decoded by Receive under the governor (decoded bytes and
// a decode credit, given back), with the declared length as the exact
// limit, and echoed back compressed; one whose envelope or body is bad
// ends its stream with InvalidArgument, and the connection goes on.
func TestCompressedStreamMessages(t *testing.T) {
	s := startServer(t, server.Options{})
	c := dialNoHandshake(t, s.addr)
	c.handshakeWith(protocol.Handshake{Capabilities: protocol.CapStreaming | protocol.CapCompression | protocol.CapCancel, Codecs: []string{"zstd"}})
	zid := c.codecID("zstd")
	plain := compressible(4096)
	z := compress(t, codecs.Zstd(), plain)
	require.Less(t, len(z), len(plain))

	t.Run("decoded by Receive", func(t *testing.T) {
		id := c.send("stream", "Echo", z, func(r *protocol.Request) {
			r.Stream, r.HasMessage, r.Cancellable = true, true, false
			compressed(zid, len(plain))(r)
		})
		c.compressedMsg(id, zid, z, len(plain), true)
		for range 2 {
			f, _ := c.nextOf()
			require.Equal(t, protocol.FrameMessage, f.typ, "%+v", f.err)
			assert.True(t, f.compressed, "echoed compressed: the connection's response codec, the method's policy")
			assert.True(t, bytes.Equal(plain, c.decodeMessage(f)))
		}
		f, _ := c.nextOf()
		assert.Equal(t, protocol.FrameEnd, f.typ)
		requireLedgerZero(t, s)
	})
	bad := map[string]func(id uint64){
		"unknown codec id": func(id uint64) { c.compressedMsg(id, 9, z, len(plain), true) },
		"declares less":    func(id uint64) { c.compressedMsg(id, zid, z, len(plain)-1, true) },
		"declares more":    func(id uint64) { c.compressedMsg(id, zid, z, len(plain)+1, true) },
		"corrupt":          func(id uint64) { c.compressedMsg(id, zid, bytes.Repeat([]byte{0xff}, 64), 100, true) },
	}
	for name, send := range bad {
		t.Run(name, func(t *testing.T) {
			id := c.open("stream", "Echo", nil, false)
			send(id)
			f, _ := c.nextOf()
			require.Equal(t, protocol.FrameError, f.typ)
			assert.Equal(t, id, f.id)
			assert.Equal(t, protocol.CodeInvalidArgument, f.err.Code, f.err.Message)
			requireLedgerZero(t, s)
		})
	}
	c.pingPong()
	assert.Nil(t, c.call("echo", "Say", []byte("ok")).err)
	assert.Zero(t, s.Stats().ProtocolViolations)
}

// TestCompressedStreamMessageOverTheDecodedBudget: a compressed message
// that would take the decoded-bytes budget past its limit ends its
// stream with ResourceExhausted and decodes nothing.
func TestCompressedStreamMessageOverTheDecodedBudget(t *testing.T) {
	s := startServer(t, server.Options{Governor: governor.Limits{DecodedBytes: 1000}})
	c := dialNoHandshake(t, s.addr)
	c.handshakeWith(protocol.Handshake{Capabilities: protocol.CapStreaming | protocol.CapCompression, Codecs: []string{"zstd"}})
	plain := compressible(4096)
	id := c.open("stream", "Echo", nil, false)
	c.compressedMsg(id, c.codecID("zstd"), compress(t, codecs.Zstd(), plain), len(plain), true)
	f, _ := c.nextOf()
	require.Equal(t, protocol.FrameError, f.typ)
	assert.Equal(t, protocol.CodeResourceExhausted, f.err.Code)
	assert.Contains(t, f.err.Message, server.ReasonDecodedBytes)
	requireLedgerZero(t, s)
}

// TestACompressedStreamMessageIsChargedItsWireLength: a compressed
// message costs its length on the wire when that exceeds the length it
// declares (protocol.MessageCost): one declaring 4 bytes and carrying more
// than the stream window borrows the whole window, so a second message
// without credit is a violation that closes the connection. Charged by
// its declared length, it would have left credit for the second.
func TestACompressedStreamMessageIsChargedItsWireLength(t *testing.T) {
	s := startServer(t, server.Options{})
	c := dialNoHandshake(t, s.addr)
	c.handshakeWith(protocol.Handshake{Capabilities: protocol.CapStreaming | protocol.CapCompression, Codecs: []string{"zstd"}})
	id := c.open("stream", "Hold", nil, false)
	<-s.mux.st.entered
	c.compressedMsg(id, c.codecID("zstd"), bytes.Repeat([]byte("x"), protocol.InitialStreamWindow+1), 4, false)
	c.msg(id, []byte("y"), false)
	f := c.expectClosed()
	require.NotNil(t, f)
	assert.Contains(t, f.Message, "credit")
	assert.Equal(t, uint64(1), s.Stats().ProtocolViolations)
}
