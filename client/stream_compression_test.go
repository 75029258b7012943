package client_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/client"
	"github.com/sluicerpc/sluice/codecs"
	"github.com/sluicerpc/sluice/protocol"
)

// TestStreamMessagesAreCompressed: a stream's messages are compressed with
// the connection's codec per the call's policy, as unary requests, and
// charged to the window by their uncompressed length: a compressible
// message of the whole window leaves no credit though few bytes travelled.
// Compressed messages from the server are decoded by Receive.
func TestStreamMessagesAreCompressed(t *testing.T) {
	p := startStreamPeerCodecs(t, streamCaps, []string{"zstd"})
	c := dial(t, client.Options{Compression: codecs.Config{Codecs: allCodecs()}}, p.addr)
	s, err := c.NewStream(ctxTimeout(t, 10*time.Second), "svc/M", client.StreamBidi)
	require.NoError(t, err)
	defer s.Close()
	pc := p.next(t)
	h, _ := pc.request(t)

	want := compressible(protocol.InitialStreamWindow)
	require.NoError(t, s.Send(want))
	_, m := pc.message(t)
	require.True(t, m.Compressed)
	assert.Equal(t, uint8(1), m.CodecID)
	assert.Equal(t, uint32(len(want)), m.OriginalLength)
	assert.Less(t, len(m.Body), len(want)/4)
	zstd, _ := codecs.ByName("zstd")
	out, err := zstd.Decompress(context.Background(), nil, m.Body, int(m.OriginalLength))
	require.NoError(t, err)
	assert.Equal(t, want, out)

	sent := make(chan error, 1)
	go func() { sent <- s.Send([]byte("b")) }()
	waitBlockedIn(t, "flow.(*SendWindow).reserve")
	pc.writeWindowUpdate(t, h.ID, uint32(len(want)), 0)
	require.NoError(t, recv(t, sent))
	pc.message(t)

	reply := compressible(10 << 10)
	f, err := protocol.AppendMessage(nil, h.ID, &protocol.Message{Body: compress(t, "zstd", reply), Compressed: true, CodecID: 1, OriginalLength: uint32(len(reply))})
	require.NoError(t, err)
	pc.write(t, f)
	got, err := s.Receive()
	require.NoError(t, err)
	assert.Equal(t, reply, got)
}

// TestStreamBadCompressedMessageEndsOnlyItsStream: a compressed message
// that does not decode ends its stream with DataLoss (the server is told
// with Cancel) and the connection carries the next stream.
func TestStreamBadCompressedMessageEndsOnlyItsStream(t *testing.T) {
	p := startStreamPeerCodecs(t, streamCaps, []string{"zstd"})
	c := dial(t, client.Options{Compression: codecs.Config{Codecs: allCodecs()}}, p.addr)
	s, err := c.NewStream(ctxTimeout(t, 10*time.Second), "svc/M", client.StreamBidi)
	require.NoError(t, err)
	defer s.Close()
	pc := p.next(t)
	h, _ := pc.request(t)
	f, err := protocol.AppendMessage(nil, h.ID, &protocol.Message{Body: []byte("not zstd at all"), Compressed: true, CodecID: 1, OriginalLength: 100})
	require.NoError(t, err)
	pc.write(t, f)
	_, err = s.Receive()
	requireCode(t, err, protocol.CodeDataLoss)
	ch, _ := pc.expect(t, protocol.FrameCancel)
	assert.Equal(t, h.ID, ch.ID)

	s2, err := c.NewStream(ctxTimeout(t, 10*time.Second), "svc/M", client.StreamBidi)
	require.NoError(t, err)
	defer s2.Close()
	pc.request(t) // the same connection
}

// TestACompressedMessageIsChargedItsWireLength: a compressed message
// costs its length on the wire when that exceeds the length it declares
// (protocol.MessageCost): one declaring 4 bytes and carrying more than the
// stream window borrows the whole window, so a second message without
// credit closes the connection. Charged by its declared length, it would
// have left credit for the second.
func TestACompressedMessageIsChargedItsWireLength(t *testing.T) {
	p := startStreamPeerCodecs(t, streamCaps, []string{"zstd"})
	c := dial(t, client.Options{Compression: codecs.Config{Codecs: allCodecs()}}, p.addr)
	s, err := c.NewStream(ctxTimeout(t, 10*time.Second), "svc/M", client.StreamBidi)
	require.NoError(t, err)
	defer s.Close()
	pc := p.next(t)
	h, _ := pc.request(t)
	body := bytes.Repeat([]byte("x"), protocol.InitialStreamWindow+1)
	f, err := protocol.AppendMessage(nil, h.ID, &protocol.Message{Body: body, Compressed: true, CodecID: 1, OriginalLength: 4})
	require.NoError(t, err)
	pc.write(t, f)
	pc.writeMessage(t, h.ID, "y")
	pc.closed(t)
}
