package client

import (
	"context"
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
// Senders assign request ids and queue opening frames holding the send
// turn (sendTurn), so that ids reach the server strictly increasing;
// queueing copies the frame into the protocol.Writer and performs no
// network I/O (the Writer's flusher does). Every wait of a sender, for the
// turn and for space in the Writer's pending buffer, ends with the
// caller's context: a connection that stops draining keeps no caller past
// its deadline (the Writer's WriteTimeout closes the connection itself).
// A frame not queued leaves its id unused, which the protocol allows (ids
// increase, not necessarily by one). The reader goroutine owns rd and
// never waits to write. mu guards the table of calls waiting for an answer
// and the connection's state; it is never held across I/O or while
// waiting for the send turn.
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

	sendTurn chan struct{} // capacity 1: holding the token is the turn to assign an id and queue
	nextID   uint64        // last assigned request id; guarded by the send turn
	lastID   atomic.Uint64 // the last id of a stream queued, for the reader

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

// takeSendTurn waits for the send turn until ctx ends; on nil the caller
// holds it and must give it back with giveSendTurn.
func (c *conn) takeSendTurn(ctx context.Context) error {
	select {
	case c.sendTurn <- struct{}{}:
		return nil
	default:
	}
	select {
	case c.sendTurn <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (c *conn) giveSendTurn() { <-c.sendTurn }

// queueOpening queues frame, a call's or stream's opening frame holding
// the send turn, waiting for pending space at most until ctx ends. It
// returns nil when the frame is queued, ctx's error when ctx ended first
// (the frame not queued), and Unavailable when the connection failed.
func (c *conn) queueOpening(ctx context.Context, frame []byte) error {
	err := c.w.WriteContext(ctx, frame)
	if err == nil {
		return nil
	}
	if e := ctx.Err(); e != nil {
		return e
	}
	return unavailable("connection to " + c.ep.addr + " failed: request not sent: " + describe(err))
}

// send assigns the next request id to cl, registers it (unless one-way) and
// queues frame, whose id field it patches. It waits for the send turn and
// for buffer space only until ctx ends. An error means the request was not
// queued, hence never sent: ctx's error, or Unavailable.
func (c *conn) send(ctx context.Context, cl *call, frame []byte, oneWay bool) error {
	if err := c.takeSendTurn(ctx); err != nil {
		return err
	}
	c.mu.Lock()
	if c.closed || c.goingAway {
		c.mu.Unlock()
		c.giveSendTurn()
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
	err := c.queueOpening(ctx, frame)
	c.giveSendTurn()
	if err == nil {
		return nil
	}
	if !oneWay && !c.abandon(cl) {
		<-cl.done // the reader failed it meanwhile; it was not sent anyway
	}
	return err
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
