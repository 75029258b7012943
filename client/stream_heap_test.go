package client_test

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/client"
	"github.com/sluicerpc/sluice/codecs"
	"github.com/sluicerpc/sluice/server"
)

// TestAGigabyteStreamKeepsBothHeapsBounded: a server stream of 1 GiB in
// 64 KiB messages through the default windows (64 KiB per stream, 1 MiB
// per connection), read by a consumer that collects the garbage every
// 1,024 messages: the live heap of the process, sender and receiver
// together, never grows by more than 8 MiB, whatever the stream's length.
func TestAGigabyteStreamKeepsBothHeapsBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("moves a gigabyte")
	}
	const size, count = 64 << 10, 16 << 10 // 1 GiB
	mux := echoMux(nil)
	mux.HandleServerStream("echo", "Gig", func(_ context.Context, req []byte, s *server.Stream) error {
		msg := make([]byte, size)
		for i := range binary.LittleEndian.Uint32(req) {
			binary.LittleEndian.PutUint32(msg, i)
			if err := s.Send(msg); err != nil {
				return err
			}
		}
		return nil
	})
	// Uncompressed both ways: the figure is about the windows, not a codec.
	off := codecs.Config{Off: true}
	ts := startServer(t, mux, server.Options{Compression: off})
	c := dial(t, client.Options{Compression: off}, ts.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	live := func() int64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return int64(m.HeapAlloc)
	}
	s, err := c.NewStream(ctx, "echo/Gig", client.StreamServer)
	require.NoError(t, err)
	req := make([]byte, 4)
	binary.LittleEndian.PutUint32(req, count)
	require.NoError(t, s.Send(req))
	base, peak := live(), int64(0)
	for i := uint32(0); ; i++ {
		m, err := s.Receive()
		if errors.Is(err, io.EOF) {
			require.Equal(t, uint32(count), i)
			break
		}
		require.NoError(t, err)
		require.Len(t, m, size)
		require.Equal(t, i, binary.LittleEndian.Uint32(m), "messages in order")
		if i%1024 == 1023 {
			peak = max(peak, live()-base)
		}
	}
	t.Logf("1 GiB in %d messages of %d bytes: live heap grew by at most %d KiB", count, size, peak>>10)
	require.Less(t, peak, int64(8<<20), "the heap grew with the stream")
}
