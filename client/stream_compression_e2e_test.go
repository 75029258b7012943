package client_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/client"
	"github.com/sluicerpc/sluice/codecs"
	"github.com/sluicerpc/sluice/server"
	"github.com/sluicerpc/sluice/spi"
)

// feedMessage is the i-th message of z/Feed: 8 KiB of compressible text
// of its own for even i, a short one for odd i.
func feedMessage(i int) []byte {
	if i%2 == 1 {
		return fmt.Appendf(nil, "short %d", i)
	}
	line := fmt.Appendf(nil, "message %d of the feed; ", i)
	return bytes.Repeat(line, 8192/len(line)+1)[:8192]
}

// TestCompressedServerStreamMessagesEndToEnd: for each built-in codec, a
// real server's stream messages go compressed (the server counts them)
// and the real client receives every one intact, in order: a server
// stream of 200 messages (100 of 8 KiB, compressed, far beyond the 64 KiB
// stream window, so the two sides must agree on each compressed message's
// charge), and a bidi echo whose messages are compressed both ways.
// Afterwards the server holds nothing.
func TestCompressedServerStreamMessagesEndToEnd(t *testing.T) {
	const n = 200
	for _, name := range []string{"zstd", "gzip", "br", "s2"} {
		t.Run(name, func(t *testing.T) {
			cd, ok := codecs.ByName(name)
			require.True(t, ok)
			mux := streamMux()
			mux.HandleServerStream("z", "Feed", func(_ context.Context, _ []byte, s *server.Stream) error {
				for i := range n {
					if err := s.Send(feedMessage(i)); err != nil {
						return err
					}
				}
				return nil
			})
			ts := startServer(t, mux, server.Options{Compression: codecs.Config{Codecs: allCodecs()}})
			c := dial(t, client.Options{Compression: codecs.Config{Codecs: []spi.Codec{cd}}}, ts.addr)
			ctx := ctxTimeout(t, 30*time.Second)

			feed, err := c.NewStream(ctx, "z/Feed", client.StreamServer)
			require.NoError(t, err)
			require.NoError(t, feed.Send([]byte("go")))
			for i := range n {
				m, err := feed.Receive()
				require.NoError(t, err, "message %d", i)
				require.Equal(t, feedMessage(i), m, "message %d", i)
			}
			_, err = feed.Receive()
			require.ErrorIs(t, err, io.EOF)
			assert.Equal(t, uint64(n/2), ts.srv.Stats().CompressedStreamMessages, "the 8 KiB messages went compressed, the short ones not")

			bidi, err := c.NewStream(ctx, "echo/Bidi", client.StreamBidi)
			require.NoError(t, err)
			sent := make(chan error, 1)
			go func() {
				for i := range 50 {
					if err := bidi.Send(feedMessage(2 * i)); err != nil {
						sent <- err
						return
					}
				}
				sent <- bidi.CloseSend()
			}()
			for i := range 50 {
				m, err := bidi.Receive()
				require.NoError(t, err, "echo %d", i)
				require.Equal(t, feedMessage(2*i), m, "echo %d", i)
			}
			_, err = bidi.Receive()
			require.True(t, errors.Is(err, io.EOF), "%v", err)
			require.NoError(t, <-sent)
			st := ts.srv.Stats()
			assert.Equal(t, uint64(n/2+50), st.CompressedStreamMessages, "every echo went back compressed")
			assert.Equal(t, uint64(50), st.Decompressions, "every message came compressed")
			assert.Zero(t, st.ProtocolViolations)

			require.Eventually(t, func() bool {
				st := ts.srv.Stats()
				g := st.Governor
				return st.ServerCalls.Active == 0 && st.ServerCalls.Reserved == 0 &&
					g.Decodes.Used == 0 && g.Retained.Used == 0 && g.Decoded.Used == 0 && g.Stream.Used == 0
			}, 10*time.Second, time.Millisecond, "%+v", ts.srv.Stats())
		})
	}
}
