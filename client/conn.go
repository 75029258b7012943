package client

import (
	"encoding/binary"
	"net"
	"sync"
	"sync/atomic"

	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/protocol/flow"
)

// route is a method's position in the server's method table.
type route struct{ service, method uint16 }

// conn is one multiplexed connection to an endpoint, from a successful
// handshake until its reader goroutine ends.
//
// Senders assign request ids and queue frames under sendMu, so that ids
// reach the server strictly increasing; queueing copies the frame into the
// protocol.Writer and performs no network I/O (the Writer's flusher does).
// The reader goroutine owns rd. mu guards the table of calls waiting for an
// answer and the connection's state; it is never held across I/O or while
// waiting on sendMu.
type conn struct {
	client *Client
	ep     *endpoint
	nc     net.Conn
	rd     *protocol.Reader
	w      *protocol.Writer
	lim    protocol.Limits // what we accept

	// From the HandshakeAck; immutable.
	caps            protocol.Capabilities
	peerMaxFrame    uint32 // the largest payload the server accepts
	peerMaxMetadata uint32
	codecs          wireCodecs // compression.go
	routes          map[string]route
	streaming       bool // CapStreaming negotiated (both announced it)

	// Connection-level flow control of streams (stream_conn.go): our
	// credit on the server's window, and the server's on ours.
	sendWin flow.SendWindow
	recvWin flow.RecvWindow

	// usable is true from the handshake until GoAway or the close: new
	// calls may start on the connection.
	usable atomic.Bool

	sendMu sync.Mutex
	nextID uint64        // last assigned request id; guarded by sendMu
	lastID atomic.Uint64 // the last id of a stream queued, for the reader

	mu        sync.Mutex
	calls     map[uint64]*call   // unary calls waiting for their answer
	streams   map[uint64]*Stream // live streams (stream_conn.go)
	closed    bool               // the reader ended: no call may register
	goingAway bool               // GoAway received: no call may register
	closeErr  error              // why the connection ends; the calls' error

	received atomic.Uint64 // frames received, for keepalive
	ka       keepalive     // guarded by mu
}

// errNotSent is the error of a request that was not written because the
// connection was closing or going away.
var errNotSent = unavailable("connection closing: request not sent")

// send assigns the next request id to cl, registers it (unless one-way) and
// queues frame, whose id field it patches. An error means the request was
// not queued, hence never sent.
func (c *conn) send(cl *call, frame []byte, oneWay bool) error {
	c.sendMu.Lock()
	c.mu.Lock()
	if c.closed || c.goingAway {
		c.mu.Unlock()
		c.sendMu.Unlock()
		return errNotSent
	}
	c.nextID++
	id := c.nextID
	cl.id = id
	if !oneWay {
		c.calls[id] = cl
	}
	c.mu.Unlock()
	binary.LittleEndian.PutUint64(frame[8:16], id)
	err := c.w.Write(frame)
	c.sendMu.Unlock()
	if err == nil {
		return nil
	}
	if !oneWay && !c.abandon(cl) {
		<-cl.done // the reader failed it meanwhile; it was not sent anyway
	}
	return unavailable("connection to " + c.ep.addr + " failed: request not sent: " + describe(err))
}

// abandon removes cl from the table of waiting calls and reports whether it
// was there: true means the caller owns the completion and no answer will
// be delivered; false means someone else completes it (the caller must
// receive from done).
func (c *conn) abandon(cl *call) bool {
	c.mu.Lock()
	owned := c.calls[cl.id] == cl
	if owned {
		delete(c.calls, cl.id)
	}
	drained := c.drainedLocked()
	c.mu.Unlock()
	if drained {
		c.close(unavailable("connection drained after GoAway"))
	}
	return owned
}

// take removes and returns the call waiting for id, nil if none (it was
// cancelled, or the server answered an unknown id).
func (c *conn) take(id uint64) *call {
	c.mu.Lock()
	cl := c.calls[id]
	if cl != nil {
		delete(c.calls, id)
	}
	drained := c.drainedLocked()
	c.mu.Unlock()
	if drained {
		c.close(unavailable("connection drained after GoAway"))
	}
	return cl
}

// sendCancel tells the server that the caller gave up on cl's request. It
// never waits for buffer space, so the caller returns at its deadline: the
// frame is queued beyond the Writer's bound, which stays bounded (a call
// cancels once, so at most one Cancel per call in flight). It reuses cl's
// frame buffer.
func (c *conn) sendCancel(cl *call, reason protocol.CancelReason) {
	if !c.caps.Has(protocol.CapCancel) {
		return
	}
	frame, err := protocol.AppendCancel(cl.frame[:0], cl.id, reason)
	if err != nil {
		return
	}
	cl.frame = frame
	_ = c.w.WriteNoWait(frame)
}

// close ends the connection: calls still waiting fail with err (unless an
// earlier cause was recorded), and the reader goroutine ends. It does not
// wait for the reader.
func (c *conn) close(err error) {
	c.usable.Store(false)
	c.mu.Lock()
	if c.closeErr == nil {
		c.closeErr = err
	}
	c.mu.Unlock()
	_ = c.nc.Close()
}

// frameTooLarge reports whether an encoded frame exceeds what the server
// accepts.
func (c *conn) frameTooLarge(frame []byte) bool {
	return uint64(len(frame)-protocol.HeaderSize) > uint64(c.peerMaxFrame)
}
