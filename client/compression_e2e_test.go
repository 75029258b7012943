package client_test

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/client"
	"github.com/sluicerpc/sluice/codecs"
	"github.com/sluicerpc/sluice/server"
	"github.com/sluicerpc/sluice/spi"
)

// TestCompressionEndToEnd: with the defaults on both sides a large
// compressible call goes compressed both ways through a real server (one
// decode there, one compressed response), a small one uncompressed, and
// every codec the two sides agree on works; the server's governor is back
// at zero afterwards.
func TestCompressionEndToEnd(t *testing.T) {
	for _, name := range []string{"zstd", "gzip", "br", "s2"} {
		t.Run(name, func(t *testing.T) {
			cd, ok := codecs.ByName(name)
			require.True(t, ok)
			ts := startServer(t, echoMux(nil), server.Options{Compression: codecs.Config{Codecs: []spi.Codec{codecs.Zstd(), codecs.Gzip(), codecs.Brotli(), codecs.S2()}}})
			c := dial(t, client.Options{Compression: codecs.Config{Codecs: []spi.Codec{cd}}}, ts.addr)
			body := bytes.Repeat([]byte(`{"user":"ada","roles":["admin","ops"],"quota":1024},`), 2000)
			out, err := c.CallRaw(ctxTimeout(t, 10*time.Second), "echo/Echo", body)
			require.NoError(t, err)
			require.Equal(t, body, out)
			st := ts.srv.Stats()
			assert.Equal(t, uint64(1), st.Decompressions, "the request went compressed and was decoded once")
			assert.Equal(t, uint64(len(body)), st.DecodedBytes)
			assert.Equal(t, uint64(1), st.CompressedResponses, "the response went compressed")

			out, err = c.CallRaw(ctxTimeout(t, 10*time.Second), "echo/Echo", []byte("small"))
			require.NoError(t, err)
			require.Equal(t, "small", string(out))
			assert.Equal(t, uint64(1), ts.srv.Stats().Decompressions, "a small body is not compressed")
			require.Eventually(t, func() bool {
				g := ts.srv.Stats().Governor
				return g.Decodes.Used == 0 && g.Retained.Used == 0 && g.Decoded.Used == 0
			}, 10*time.Second, time.Millisecond)
		})
	}
}
