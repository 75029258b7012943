package client_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/client"
	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/protocol/status"
	"github.com/sluicerpc/sluice/server"
)

// TestNewStreamIsNotCancelledByAnImmediateServerEnd reproduces a bug the
// interleaving model found (TestStreamInterleavingsAgainstAModel, seed
// 7437407535984159301, a bidi stream whose handler fails at once): when
// the server's Error for a new stream arrives before NewStream's opening
// attempt looks at the stream again (right after queueing its Request),
// streamAttemptOnce takes the end for a Close during the opening and
// NewStream fails with Canceled "the stream was closed". The Request was
// queued and the caller closed nothing: NewStream must return the stream,
// whose Receive reports the handler's status. It is a race (about one
// stream in a few thousand on a busy machine), so the test opens many.
func TestNewStreamIsNotCancelledByAnImmediateServerEnd(t *testing.T) {
	mux := server.NewMux()
	mux.HandleBidiStream("race", "Fail", func(context.Context, *server.Stream) error {
		return status.New(protocol.CodeAborted, "at once")
	})
	ts := startServer(t, mux, server.Options{})
	c := dial(t, client.Options{}, ts.addr)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := range 20000 {
		s, err := c.NewStream(ctx, "race/Fail", client.StreamBidi)
		require.NoError(t, err, "stream %d: NewStream", i)
		_, err = s.Receive()
		require.Equal(t, protocol.CodeAborted, status.Code(err), "stream %d: %v", i, err)
		_ = s.Close()
	}
}
