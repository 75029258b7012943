package client_test

import (
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/client"
	"github.com/sluicerpc/sluice/protocol"
)

// TestTheReaderNeverWaitsToWriteAPong (issue 36 section 1): a server that
// reads one Request, then stops reading and sends Pings until the
// client's Pongs can no longer leave (its socket and the client's pending
// buffer full), then answers the Request. The client's reader used to
// block queueing a Pong, so no answer was delivered to anyone on the
// connection until the write timeout failed it; now a Pong that does not
// fit is dropped and the answer arrives.
func TestTheReaderNeverWaitsToWriteAPong(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	served, done, exited := make(chan error, 1), make(chan struct{}), make(chan struct{})
	defer func() { close(done); <-exited }()
	go func() {
		defer close(exited)
		nc, err := l.Accept()
		if err != nil {
			served <- err
			return
		}
		defer nc.Close()
		rd := protocol.NewReader(nc, protocol.DefaultLimits())
		if _, _, err := rd.ReadFrame(); err != nil { // the Handshake
			served <- err
			return
		}
		ack, _ := protocol.AppendHandshakeAck(nil, &protocol.HandshakeAck{
			Version: protocol.Version, Capabilities: protocol.CapCancel | protocol.CapKeepalive,
			MaxFrameSize: protocol.MinFrameSize, MaxMetadataBytes: 1024,
			Services: []protocol.ServiceInfo{{Name: "svc", Methods: []string{"M"}}},
		})
		if _, err := nc.Write(ack); err != nil {
			served <- err
			return
		}
		h, _, err := rd.ReadFrame() // the Request; nothing is read after it
		if err != nil {
			served <- err
			return
		}
		// 24 MB of Pongs to answer: far beyond what the sockets and the
		// client's pending buffer hold.
		pings := make([]byte, 0, 1<<20)
		for range (1 << 20) / 24 {
			pings = protocol.AppendPing(pings, [8]byte{})
		}
		for range 24 {
			if _, err := nc.Write(pings); err != nil {
				served <- err
				return
			}
		}
		resp, _ := protocol.AppendResponse(nil, h.ID, &protocol.Response{Body: []byte("answered")})
		_, err = nc.Write(resp)
		served <- err
		<-done // hold the connection open, unread, until the test ends
	}()

	c := dial(t, client.Options{WriteTimeout: time.Hour}, l.Addr().String())
	out, err := c.CallRaw(ctxTimeout(t, time.Minute), "svc/M", []byte("q"))
	require.NoError(t, <-served)
	require.NoError(t, err, "the answer must arrive while the server reads nothing")
	require.Equal(t, "answered", string(out))
}
