package server

import (
	"net"
	"time"

	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/server/internal/conngate"
)

// acceptRefusalFrames are the connection-level Error frames a plaintext
// server writes to a connection it refuses at accept, one per reason,
// encoded once: the client reads it where it expects the HandshakeAck and
// can say why it was refused instead of guessing from a closed connection.
// Unavailable, without a reason (no call was refused): another endpoint,
// or this one later, may take the connection.
var acceptRefusalFrames = func() [conngate.ReasonCount][]byte {
	var frames [conngate.ReasonCount][]byte
	for r, msg := range map[conngate.Reason]string{
		conngate.ReasonConnectionLimit:     "the server is at its connection limit",
		conngate.ReasonHandshakeLimit:      "the server is at its limit of connections in handshake",
		conngate.ReasonHandshakePerAddress: "the server is at its limit of connections in handshake from your address",
	} {
		f, err := protocol.AppendError(nil, 0, &protocol.ErrorFrame{Code: protocol.CodeUnavailable, Message: msg})
		if err != nil {
			panic("server: encoding an accept refusal: " + err.Error())
		}
		frames[r] = f
	}
	return frames
}()

// writeAcceptRefusal writes the refusal of reason r to nc, which the
// caller then closes. Only plaintext: a TLS client expects a ServerHello,
// not a frame. A new TCP socket's send buffer is empty, so the write of a
// few dozen bytes does not wait; on a connection without a buffer (an
// in-memory pipe) the deadline keeps the accept loop from waiting for a
// peer that does not read. Best effort.
func (s *Server) writeAcceptRefusal(nc net.Conn, r conngate.Reason) {
	if s.o.TLS != nil || int(r) >= len(acceptRefusalFrames) || acceptRefusalFrames[r] == nil {
		return
	}
	_ = nc.SetWriteDeadline(time.Now().Add(acceptRefusalWriteTimeout))
	_, _ = nc.Write(acceptRefusalFrames[r])
}

// acceptRefusalWriteTimeout bounds the refusal's write.
const acceptRefusalWriteTimeout = 10 * time.Millisecond
