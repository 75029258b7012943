package client

import (
	"errors"
	"fmt"
	"io"
	"net"
	"runtime/debug"
	"sync/atomic"

	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/protocol/status"
)

// readLoop is the connection's reader goroutine: it dispatches every frame
// until the connection fails or is closed, then fails the calls still
// waiting and releases the connection.
func (c *conn) readLoop() {
	defer c.client.wg.Done()
	err := c.readFramesRecovered()
	c.shutdown(err)
}

// readFramesRecovered is readFrames with a panic (a bug: no frame sequence
// from a server may cause one) turned into the connection's end: its calls
// and streams fail with Internal, the panic and its stack are logged at
// Error, and the process goes on.
func (c *conn) readFramesRecovered() (err error) {
	defer func() {
		if r := recover(); r != nil {
			c.client.cfg.Logger.Error("sluice client: connection closed: panic while handling a frame", "endpoint", c.ep.addr, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			err = connError{status.Errorf(protocol.CodeInternal, "sluice client: connection to %s closed: internal error while handling a frame from the server", c.ep.addr)}
		}
	}()
	return c.readFrames()
}

// testHookOnFrame, if set, runs on the reader for every frame read.
var testHookOnFrame atomic.Pointer[func(protocol.Header)]

func (c *conn) readFrames() error {
	var resp protocol.Response
	var msg protocol.Message
	var end protocol.End
	var pong []byte
	for {
		h, payload, err := c.rd.ReadFrame()
		if err != nil {
			return err
		}
		c.received.Add(1)
		if f := testHookOnFrame.Load(); f != nil {
			(*f)(h)
		}
		switch h.Type {
		case protocol.FrameResponse:
			err := protocol.ParseResponse(h, payload, c.lim, &resp)
			if err != nil && !metadataLimit(err) {
				return err
			}
			if cl := c.take(h.ID); cl != nil {
				if err != nil {
					cl.complete(outcomeRemoteError, responseMetadataRefused(err))
					continue
				}
				cl.md.capture(&resp.Metadata)
				if resp.Compressed {
					c.deliverCompressed(cl, &resp)
					continue
				}
				cl.completeBody(resp.Body)
			}
		case protocol.FrameError:
			var f protocol.ErrorFrame
			if err := protocol.ParseError(h, payload, c.lim, &f); err != nil && !metadataLimit(err) {
				return err // (metadata over the limits is dropped: the call fails anyway)
			}
			if h.ID == 0 {
				return connError{statusOf(&f)}
			}
			if cl := c.take(h.ID); cl != nil {
				cl.md.capture(&f.Metadata)
				cl.complete(outcomeRemoteError, statusOf(&f))
			} else if c.streaming {
				c.onStreamError(h.ID, &f)
			}
		case protocol.FramePing:
			data, err := protocol.ParsePing(h, payload)
			if err != nil {
				return err
			}
			// Never wait to queue it: a server that stops reading would
			// stop this reader, and with it every answer on the
			// connection. A Pong that does not fit is dropped; a server
			// that counts on it is not draining its own socket anyway.
			pong = protocol.AppendPong(pong[:0], data)
			_ = c.w.TryWrite(pong)
		case protocol.FramePong:
			// Counted in received: the server is alive.
		case protocol.FrameGoAway:
			var g protocol.GoAway
			if err := protocol.ParseGoAway(h, payload, &g); err != nil {
				return err
			}
			c.onGoAway(&g)
		case protocol.FrameMessage, protocol.FrameEnd, protocol.FrameWindowUpdate:
			if !c.streaming {
				return &protocol.ProtocolError{Reason: "the server sent a " + h.Type.String() + " frame, but streaming was not negotiated"}
			}
			var err error
			switch h.Type {
			case protocol.FrameMessage:
				err = c.onMessage(h, payload, &msg)
			case protocol.FrameEnd:
				err = c.onEnd(h, payload, &end)
			default:
				err = c.onWindowUpdate(h, payload)
			}
			if err != nil {
				return err
			}
		default:
			return &protocol.ProtocolError{Reason: "the server sent a " + h.Type.String() + " frame"}
		}
	}
}

// connError is a connection-level Error frame from the server.
type connError struct{ err error }

func (e connError) Error() string { return e.err.Error() }
func (e connError) Unwrap() error { return e.err }

// onGoAway stops new calls on the connection, fails the calls the server
// will not process (id > LastID) as retryable, and lets the others finish.
func (c *conn) onGoAway(g *protocol.GoAway) {
	c.usable.Store(false)
	c.ep.detach(c)
	c.logGoAway(g)
	var lost []*call
	c.mu.Lock()
	c.goingAway = true
	for id, cl := range c.calls {
		if id > g.LastID {
			delete(c.calls, id)
			lost = append(lost, cl)
		}
	}
	drained := len(c.calls) == 0 && len(c.streams) == 0
	c.mu.Unlock()
	err := unavailable("server going away (" + g.Message + "): request not processed")
	for _, cl := range lost {
		cl.complete(outcomeGoAway, err)
	}
	c.failStreams(g.LastID, outcomeGoAway, err) // they may leave the connection drained
	if drained {
		c.close(unavailable("connection drained after GoAway"))
	}
}

// shutdown ends the connection after its reader stopped with readErr: the
// calls still waiting fail (with the recorded close cause, or Unavailable
// for a lost connection), the endpoint forgets the connection, the
// keepalive stops and the writer and socket are closed.
func (c *conn) shutdown(readErr error) {
	c.usable.Store(false)
	c.ep.detach(c)
	c.mu.Lock()
	c.closed = true
	cause := c.closeErr
	if cause == nil {
		cause = lostError(c.ep.addr, readErr)
		c.closeErr = cause
	}
	calls := c.calls
	c.calls = nil
	c.ka.stop()
	c.mu.Unlock()
	for _, cl := range calls {
		cl.complete(outcomeConnClosed, cause)
	}
	c.failStreams(0, outcomeConnClosed, cause)
	c.sendWin.Close()
	// The socket first: with the reader gone nothing pending is of use,
	// and a peer that stopped reading must not hold this goroutine in
	// the Writer's flush until the write timeout.
	_ = c.nc.Close()
	_ = c.w.Close()
	c.client.untrack(c)
	if readErr != nil && !errors.Is(readErr, net.ErrClosed) {
		c.logLost(readErr)
	}
}

// lostError is the error of calls on a connection to addr that ended with
// readErr.
func lostError(addr string, readErr error) error {
	var ce connError
	switch {
	case errors.As(readErr, &ce):
		return ce.err
	case errors.Is(readErr, io.EOF):
		return unavailable("connection to " + addr + " closed by the server")
	case protocol.IsViolation(readErr):
		return unavailable("connection to " + addr + " closed: protocol violation by the server: " + violationText(readErr))
	default:
		return unavailable("connection to " + addr + " lost: " + describe(readErr))
	}
}
