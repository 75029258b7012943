package client_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/client"
	"github.com/sluicerpc/sluice/protocol"
)

// TestStreamIsNotRetriedOnceOpened: a stream whose Request was queued is
// not sent again, even when the server's GoAway says it was not
// processed: it fails Unavailable, and the next connection's first
// Request is the next stream's.
func TestStreamIsNotRetriedOnceOpened(t *testing.T) {
	p := startStreamPeer(t, streamCaps)
	c := dial(t, client.Options{}, p.addr)
	ctx := ctxTimeout(t, 10*time.Second)
	s, err := c.NewStream(ctx, "svc/M", client.StreamBidi, client.WithMetadata("n", "1"))
	require.NoError(t, err)
	defer s.Close()
	pc := p.next(t)
	pc.request(t)
	f, _ := protocol.AppendGoAway(nil, &protocol.GoAway{LastID: 0, Message: "restarting"})
	pc.write(t, f)
	_, err = s.Receive()
	requireCode(t, err, protocol.CodeUnavailable)

	s2, err := c.NewStream(ctx, "svc/M", client.StreamBidi, client.WithMetadata("n", "2"))
	require.NoError(t, err)
	defer s2.Close()
	_, req := p.next(t).request(t)
	assert.Equal(t, "2", metaValue(t, &req.Metadata, "n"))
}
