package client_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/client"
	"github.com/sluicerpc/sluice/codecs"
	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/spi"
)

// compressedPeer is a codecPeer accepting name alone that answers svc/M
// with the compressed form of resp and svc/N with resp uncompressed,
// recording nothing: what a call allocates is the client's, plus the
// peer's fixed per-request work (none once its buffers have grown).
func compressedPeer(t testing.TB, name string, resp []byte) *codecPeer {
	wire := compress(t, name, resp)
	return startCodecPeer(t, peerConfig{accept: []string{name}, maxFrame: 4 << 20, noRecord: true,
		respond: func(dst []byte, _ int, id uint64, req *protocol.Request) []byte {
			if req.Method == 0 {
				return appendCompressed(dst, id, 1, uint32(len(resp)), wire)
			}
			out, _ := protocol.AppendResponse(dst, id, &protocol.Response{Body: resp})
			return out
		}})
}

// BenchmarkCallRawCompressed measures a unary call with a 4 KiB request
// and a 4 KiB response against a scripted loopback peer that answers with
// a prepared body (so that the figures are the client's): uncompressed,
// then compressed both ways with each codec.
func BenchmarkCallRawCompressed(b *testing.B) {
	body := compressible(4 << 10)
	b.Run("uncompressed", func(b *testing.B) {
		p := compressedPeer(b, "zstd", body)
		cl := dial(b, client.Options{Compression: codecs.Config{Off: true}}, p.addr)
		b.ReportAllocs()
		b.SetBytes(int64(2 * len(body)))
		for b.Loop() {
			if _, err := cl.CallRaw(b.Context(), "svc/N", body); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, c := range []spi.Codec{codecs.Zstd(), codecs.S2(), codecs.Gzip(), codecs.Brotli()} {
		b.Run(c.Name(), func(b *testing.B) {
			p := compressedPeer(b, c.Name(), body)
			cl := dial(b, client.Options{Compression: codecs.Config{Codecs: []spi.Codec{c}}}, p.addr)
			_, err := cl.CallRaw(b.Context(), "svc/M", body)
			require.NoError(b, err)
			b.ReportAllocs()
			b.SetBytes(int64(2 * len(body)))
			for b.Loop() {
				if _, err := cl.CallRaw(b.Context(), "svc/M", body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
