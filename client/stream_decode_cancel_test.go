package client_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/client"
	"github.com/sluicerpc/sluice/codecs"
	"github.com/sluicerpc/sluice/protocol"
)

// TestACancelledDecodeIsAStableEnd: the server ended a stream (two
// compressed messages, then End) before the caller cancelled its context;
// the decode of the first queued message fails with the context's error,
// and so does every later Receive: the second message is not returned
// after it, nor io.EOF (an end, once Receive returned it, is stable).
func TestACancelledDecodeIsAStableEnd(t *testing.T) {
	p := startStreamPeerCodecs(t, streamCaps, []string{"zstd"})
	c := dial(t, client.Options{Compression: codecs.Config{Codecs: allCodecs()}}, p.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := c.NewStream(ctx, "svc/M", client.StreamBidi)
	require.NoError(t, err)
	defer s.Close()
	pc := p.next(t)
	h, _ := pc.request(t)

	msg := compressible(10 << 10)
	z := compress(t, "zstd", msg)
	for range 2 {
		f, err := protocol.AppendMessage(nil, h.ID, &protocol.Message{Body: z, Compressed: true, CodecID: 1, OriginalLength: uint32(len(msg))})
		require.NoError(t, err)
		pc.write(t, f)
	}
	pc.writeEnd(t, h.ID, "t", "1")
	require.Eventually(t, func() bool { return s.Trailer().Len() > 0 }, 10*time.Second, time.Millisecond, "the End arrived")
	cancel()

	_, err = s.Receive()
	require.ErrorIs(t, err, context.Canceled)
	for range 2 {
		_, again := s.Receive()
		assert.True(t, errors.Is(again, context.Canceled), "Receive after the end: %v", again)
	}
}
