package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicerpc/sluice/kernel/governor"
	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/protocol/flow"
	"github.com/sluicerpc/sluice/protocol/status"
	"github.com/sluicerpc/sluice/server/internal/conngate"
	"github.com/sluicerpc/sluice/spi"
)

// conn is one accepted connection. Its goroutine (serve) owns the reader
// side: the handshake, then reading and dispatching frames. Calls run on
// goroutines of their own and write through the coalescing writer.
type conn struct {
	s    *Server
	nc   net.Conn // the connection; the TLS one once TLS is up
	raw  net.Conn // the accepted connection, under TLS if any
	slot conngate.Slot
	id   uint64

	ctx    context.Context // cancelled when the connection ends
	cancel context.CancelCauseFunc
	peer   Peer

	rd *protocol.Reader
	w  *protocol.Writer
	// reqStart is when the request the reader handles arrived (with
	// metrics; zero without); the reader owns it.
	reqStart time.Time
	lim      protocol.Limits // what this server accepts
	peerMax  uint32          // the largest payload the client accepts
	// codecs are the profiles of the client's offer that the server
	// accepts, in the client's order: the HandshakeAck lists them, and
	// codec id N names codecs[N-1]. respCodec, the first, compresses
	// responses (id 1); nil when there is none.
	codecs      []spi.Codec
	respCodec   spi.Codec
	respCodecID uint8
	caps        *governor.CallCapacity
	share       *governor.Share // the connection's account of the governor's byte budgets (fair shares)

	// Reader-goroutine state.
	ids  protocol.IDSequence
	req  protocol.Request
	wbuf []byte

	mu      sync.Mutex
	calls   map[uint64]*call   // calls the client may cancel
	streams map[uint64]*Stream // live streams, by id

	// Streams (docs/streaming.md): streaming is set by the handshake when
	// the client announced CapStreaming too (this server always does);
	// the connection's windows in each direction; the reader's parse
	// targets.
	streaming bool
	recvConn  flow.RecvWindow
	sendConn  flow.SendWindow
	msg       protocol.Message
	end1      protocol.End

	inflight   sync.WaitGroup
	active     atomic.Int64  // calls in flight
	frames     atomic.Uint64 // every frame received (liveness)
	callFrame  atomic.Uint64 // Request and Cancel frames received (activity)
	lastID     atomic.Uint64 // last accepted request id
	ready      atomic.Bool   // the handshake is done and w exists
	draining   atomic.Bool
	paused     atomic.Bool // the reader waits for the client to read
	goAwayOnce sync.Once
	goAwayMsg  atomic.Pointer[string]
	// ending is set by the first end; ended is closed when it has
	// flushed and closed the connection (serve waits for it).
	ending atomic.Bool
	ended  chan struct{}
	ticker *time.Timer

	// hsMu orders the handshake's deadlines with Stop cutting them:
	// hsDone is set once the handshake cleared its deadline, after which
	// Stop must not set one.
	hsMu   sync.Mutex
	hsDone bool
}

// stopHandshakeGrace is how long a connection still in its handshake when
// Stop begins may take to finish it (at most the handshake timeout): a
// live client finishes in a few round trips and gets its GoAway, a silent
// socket is closed instead of holding Stop for the whole timeout.
const stopHandshakeGrace = time.Second

// init prepares an admitted connection; the accept loop calls it before
// starting serve, so that Stop and Close can reach the connection at once.
func (c *conn) init() {
	c.id = c.s.nextConnID.Add(1)
	c.raw = c.nc
	c.peer.RemoteAddr = c.nc.RemoteAddr()
	ctx, cancel := context.WithCancelCause(c.s.ctx)
	c.ctx, c.cancel = context.WithValue(ctx, peerKey{}, &c.peer), cancel
}

// Peer describes the client of a call, for handlers: PeerFromContext.
type Peer struct {
	// Identity is what the Authenticator returned ("" without one).
	Identity   string
	RemoteAddr net.Addr
	// TLS is the connection's TLS state, nil without TLS.
	TLS *tls.ConnectionState
}

type peerKey struct{}

// PeerFromContext returns the client of the call whose context ctx is (or
// derives from).
func PeerFromContext(ctx context.Context) (*Peer, bool) {
	p, ok := ctx.Value(peerKey{}).(*Peer)
	return p, ok
}

// serve runs the connection: handshake, then the read loop; when it ends,
// it waits for the calls of a draining connection, flushes and closes.
func (c *conn) serve() {
	defer c.s.unregister(c)
	defer c.slot.Release()
	defer c.cancel(errConnClosed)

	if !c.handshake() {
		c.s.stats.handshakeFailures.Add(1)
		if c.rd != nil {
			c.rd.Close()
		}
		_ = c.nc.Close()
		return
	}
	c.caps = c.s.connCaps.Open()
	defer c.s.connCaps.Close(c.caps)
	c.share = c.s.governor.OpenShare()
	defer c.share.Close()
	c.calls = make(map[uint64]*call)
	c.streams = make(map[uint64]*Stream)
	c.recvConn.Init(protocol.InitialConnWindow, protocol.MaxWindow)
	c.sendConn.Init(protocol.InitialConnWindow, protocol.MaxWindow)
	c.w = protocol.NewWriterConfig(c.nc, protocol.WriterConfig{
		BufferSize:   c.s.o.WriteBufferSize,
		WriteTimeout: max(c.s.o.WriteTimeout, 0),
		OnError:      c.writeFailed,
	})
	c.ready.Store(true)
	if c.draining.Load() {
		c.goAway() // Stop came during the handshake
	}
	c.startTicker()

	err := c.readLoop()
	c.rd.Close() // the charge of a frame the loop refused goes back now
	defer c.logClosed(err)
	c.stopTicker()
	if err != nil {
		// The client left, broke the protocol, or the connection was
		// closed under us: nobody will read responses, end the calls.
		c.cancel(err)
	}
	if !c.s.isClosed() {
		// Close does not wait for handlers; every other end does,
		// so that their responses are flushed before the close.
		c.inflight.Wait()
	}
	c.end()
	<-c.ended // another goroutine may be the one flushing
}

// errConnClosed is the cause of a connection's context once it is done.
var errConnClosed = errors.New("server: connection closed")

// handshake runs TLS, reads the client's Handshake, authenticates it and
// answers with the HandshakeAck, all within the handshake timeout. It
// reports whether the connection may carry calls.
func (c *conn) handshake() bool {
	deadline := time.Now().Add(c.s.o.HandshakeTimeout)
	c.hsMu.Lock()
	if c.draining.Load() {
		deadline = time.Now().Add(min(c.s.o.HandshakeTimeout, stopHandshakeGrace))
	}
	_ = c.raw.SetDeadline(deadline)
	c.hsMu.Unlock()
	ctx, cancel := context.WithDeadline(c.ctx, deadline)
	defer cancel()
	if cfg := c.s.o.TLS; cfg != nil {
		tc := tls.Server(c.nc, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			c.s.o.Logger.Debug("TLS handshake failed", "remote", c.peer.RemoteAddr, "error", err)
			return false
		}
		st := tc.ConnectionState()
		c.nc, c.peer.TLS = tc, &st
	}
	c.lim = c.s.o.limits
	c.rd = protocol.NewReader(c.nc, c.lim)
	c.rd.SetBudget(c.s.frameBudget)
	// Until the handshake completes, the largest legal frame is the
	// handshake's own bound, not the connection's maximum frame size.
	c.rd.SetMaxFrameSize(protocol.MaxHandshakeSize(c.lim))
	h, payload, err := c.rd.ReadFrame()
	if err != nil {
		c.failHandshake(err)
		return false
	}
	if h.Type != protocol.FrameHandshake {
		c.failHandshake(&protocol.ProtocolError{Reason: "the first frame is " + h.Type.String() + ", not Handshake"})
		return false
	}
	var hs protocol.Handshake
	if err := protocol.ParseHandshake(h, payload, c.lim, &hs); err != nil {
		if errors.Is(err, protocol.ErrUnsupportedVersion) {
			c.sendConnError(protocol.CodeFailedPrecondition, "unsupported protocol version")
			return false
		}
		c.failHandshake(err)
		return false
	}
	c.peerMax = hs.MaxFrameSize
	c.streaming = hs.Capabilities.Has(protocol.CapStreaming)
	c.chooseCodecs(hs.Codecs)
	if a := c.s.o.Authenticator; a != nil {
		id, err := authenticate(ctx, a, AuthInfo{Payload: hs.Auth, TLS: c.peer.TLS, RemoteAddr: c.peer.RemoteAddr})
		if err != nil {
			c.s.stats.authFailures.Add(1)
			code, msg := protocol.CodeUnauthenticated, err.Error()
			if e, ok := status.FromError(err); ok {
				msg = e.Message
				if e.Code == protocol.CodePermissionDenied {
					code = protocol.CodePermissionDenied
				}
			}
			c.sendConnError(code, msg)
			return false
		}
		c.peer.Identity = id
	}
	// The handshake slot is given back before the HandshakeAck is
	// written: a client holding its ack never finds its own slot still
	// counted (a failed write ends the connection, and the slot with it).
	c.slot.HandshakeDone()
	ack, err := c.s.ackFor(c.codecs)
	if err != nil {
		c.failHandshake(err)
		return false
	}
	if _, err := c.nc.Write(ack); err != nil {
		return false
	}
	if hk := c.s.hooks.Load(); hk != nil && hk.afterAck != nil {
		hk.afterAck()
	}
	c.hsMu.Lock()
	c.hsDone = true
	_ = c.raw.SetDeadline(time.Time{})
	c.hsMu.Unlock()
	c.rd.SetMaxFrameSize(c.lim.MaxFrameSize)
	return true
}

// authenticate runs the authenticator, turning a panic into an error.
func authenticate(ctx context.Context, a Authenticator, info AuthInfo) (id string, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = status.Errorf(protocol.CodeUnauthenticated, "authenticator panic: %v", r)
		}
	}()
	return a.Authenticate(ctx, info)
}

// failHandshake answers a broken handshake: a violation gets a connection
// Error before the close; an I/O error or timeout just the close.
func (c *conn) failHandshake(err error) {
	if protocol.IsViolation(err) {
		c.s.stats.violations.Add(1)
		c.sendConnError(protocol.CodeInternal, "protocol violation: "+err.Error())
		c.logViolation(err)
	}
}

// sendConnError writes a connection-level Error frame (id 0) directly,
// before the writer exists or after it stopped; best effort.
func (c *conn) sendConnError(code protocol.Code, msg string) {
	frame, err := protocol.AppendError(nil, 0, &protocol.ErrorFrame{Code: code, Message: clip(msg)})
	if err != nil {
		return
	}
	_ = c.nc.SetWriteDeadline(time.Now().Add(time.Second))
	_, _ = c.nc.Write(frame)
}

// readLoop reads and dispatches frames until the connection ends. It
// returns nil when the connection ended by design (drain, idle, Close) and
// the reason otherwise. A panic while a frame is handled (a bug: no frame
// sequence may cause one) ends this connection, not the process
// (readPanicked).
func (c *conn) readLoop() (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = c.readPanicked(r)
		}
	}()
	for {
		if c.w.Saturated() {
			if err := c.awaitClientReading(); err != nil {
				if c.draining.Load() || c.s.isClosing() {
					return nil
				}
				return err
			}
		}
		h, payload, err := c.rd.ReadFrame()
		if err != nil {
			switch {
			case protocol.IsViolation(err):
				c.violation(err)
			case errors.Is(err, protocol.ErrFrameBudget):
				c.frameBudgetSpent()
			}
			// Draining or not, nothing more can arrive: serve ends the
			// calls still running (a stream waiting for its client's
			// next message would otherwise hold Stop to its deadline).
			return err
		}
		c.frames.Add(1)
		switch h.Type {
		case protocol.FrameRequest:
			c.callFrame.Add(1)
			if err := c.onRequest(h, payload); err != nil {
				c.violation(err)
				return err
			}
		case protocol.FrameCancel:
			c.callFrame.Add(1)
			// Both reasons end the call alike; the reason is only
			// validated.
			if _, err := protocol.ParseCancel(h, payload); err != nil {
				c.violation(err)
				return err
			}
			c.onCancel(h.ID)
		case protocol.FramePing:
			data, err := protocol.ParsePing(h, payload)
			if err != nil {
				c.violation(err)
				return err
			}
			c.wbuf = protocol.AppendPong(c.wbuf[:0], data)
			_ = c.w.Write(c.wbuf)
		case protocol.FrameMessage:
			if err := c.onMessage(h, payload); err != nil {
				c.violation(err)
				return err
			}
		case protocol.FrameEnd:
			if err := c.onEnd(h, payload); err != nil {
				c.violation(err)
				return err
			}
		case protocol.FrameWindowUpdate:
			if err := c.onWindowUpdate(h, payload); err != nil {
				c.violation(err)
				return err
			}
		case protocol.FramePong:
			// Counted in frames: the client is alive.
		case protocol.FrameGoAway:
			var g protocol.GoAway
			if err := protocol.ParseGoAway(h, payload, &g); err != nil {
				c.violation(err)
				return err
			}
			// The client sends nothing new; answers to its calls in
			// flight still go out, then it closes.
		default:
			err := &protocol.ProtocolError{Reason: "a client sent a " + h.Type.String() + " frame"}
			c.violation(err)
			return err
		}
	}
}

// awaitClientReading is backpressure: the responses this client has not
// read reached the write buffer's bound, so no further request is read
// from it until it reads (or the write timeout closes the connection).
// Other connections are not affected.
func (c *conn) awaitClientReading() error {
	c.paused.Store(true)
	defer c.paused.Store(false)
	c.s.stats.backpressured.Add(1)
	return c.w.WaitUnsaturated()
}

// writeFailed is the writer's OnError: a write failed or made no progress
// for the write timeout, so nothing more can reach the client. The
// connection is closed; its calls see their context cancelled.
func (c *conn) writeFailed(err error) {
	if errors.Is(err, os.ErrDeadlineExceeded) {
		c.s.stats.writeTimeouts.Add(1)
		c.logWriteTimeout()
	}
	c.close(errWriteFailed)
}

// errWriteFailed is the cause of the calls of a connection closed after a
// write failed or timed out.
var errWriteFailed = errors.New("server: writing to the client failed or timed out")

// frameBudgetSpent answers a frame the server's MaxFrameMemory cannot
// hold now: a connection Error (ResourceExhausted), then the close.
func (c *conn) frameBudgetSpent() {
	c.s.stats.frameBudgetRefusals.Add(1)
	f, err := protocol.AppendError(nil, 0, &protocol.ErrorFrame{Code: protocol.CodeResourceExhausted, Message: "the server cannot hold another large frame now (MaxFrameMemory); retry later"})
	if err == nil {
		_ = c.w.WriteFinal(f)
	}
}

// readPanicked ends a connection whose frame handling panicked: the
// client gets an Internal connection Error, the panic and its stack are
// logged at Error, and Stats.ReadLoopPanics counts it. It returns the
// read loop's error.
func (c *conn) readPanicked(r any) error {
	c.s.stats.readLoopPanics.Add(1)
	f, ferr := protocol.AppendError(nil, 0, &protocol.ErrorFrame{Code: protocol.CodeInternal, Message: "internal error"})
	if ferr == nil {
		_ = c.w.WriteFinal(f)
	}
	c.logConn(slog.LevelError, "server: connection closed: panic while handling a frame", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
	return fmt.Errorf("server: panic while handling a frame: %v", r)
}

// violation answers a protocol violation with a connection Error and
// closes the connection; the stream is never resynchronized.
func (c *conn) violation(err error) {
	c.s.stats.violations.Add(1)
	f, ferr := protocol.AppendError(nil, 0, &protocol.ErrorFrame{Code: protocol.CodeInternal, Message: clip("protocol violation: " + err.Error())})
	if ferr == nil {
		_ = c.w.WriteFinal(f) // nothing follows a connection Error
	}
	c.logViolation(err)
}

// onCancel cancels the call id if it is still in flight and cancellable.
// It holds c.mu while cancelling, so the call cannot finish and be reused
// for another request meanwhile. The cancellation is counted first: by the
// time its effects show (the handler's context, the Canceled answer), so
// does the count.
func (c *conn) onCancel(id uint64) {
	c.mu.Lock()
	if cl := c.calls[id]; cl != nil {
		c.s.stats.cancels.Add(1)
		cl.cancel()
	}
	c.mu.Unlock()
}

// drain starts a graceful end: a GoAway with the last accepted id, new
// requests answered Unavailable, and the close once no call is in flight.
// A connection still in its handshake gets the GoAway right after it.
func (c *conn) drain() { c.drainWith("server stopping") }

// drainWith drains with msg in the GoAway.
func (c *conn) drainWith(msg string) {
	c.goAwayMsg.CompareAndSwap(nil, &msg)
	c.draining.Store(true)
	if c.ready.Load() {
		c.goAway()
		return
	}
	c.cutHandshake()
}

// cutHandshake gives a connection still in its handshake when it starts
// draining at most stopHandshakeGrace to finish it.
func (c *conn) cutHandshake() {
	c.hsMu.Lock()
	defer c.hsMu.Unlock()
	if !c.hsDone {
		_ = c.raw.SetDeadline(time.Now().Add(min(c.s.o.HandshakeTimeout, stopHandshakeGrace)))
	}
}

// goAway sends the GoAway, once, and ends the connection if no call is in
// flight (otherwise the last call to end does). It never waits for the
// client: the GoAway is queued without waiting, and the end is done by
// its first caller only (see end).
func (c *conn) goAway() {
	c.goAwayOnce.Do(func() {
		msg := "server stopping"
		if m := c.goAwayMsg.Load(); m != nil {
			msg = *m
		}
		last := c.lastID.Load()
		if f, err := protocol.AppendGoAway(nil, &protocol.GoAway{LastID: last, Code: protocol.CodeOK, Message: msg}); err == nil {
			// Never blocks (Stop sends it): a peer that does not read
			// cannot hold the GoAway's sender.
			_ = c.w.WriteNoWait(f)
			c.logGoAway(last, msg)
		}
	})
	if c.active.Load() == 0 {
		c.end()
	}
}

// callDone is called by every call as it ends.
func (c *conn) callDone() {
	if c.active.Add(-1) == 0 && c.draining.Load() {
		c.goAway() // sent already, or now: then the close
		c.end()
	}
	c.inflight.Done()
}

// end flushes what is pending and closes the connection, once. The first
// caller does it, and may wait up to the write timeout for a client that
// stopped reading; every later caller returns at once (a call that ends
// meanwhile is not held behind the flush). serve waits for it before it
// returns. Only called once the writer exists.
func (c *conn) end() {
	if !c.ending.CompareAndSwap(false, true) {
		return
	}
	_ = c.w.Close()
	_ = c.nc.Close()
	close(c.ended)
}

// close ends the connection at once (Server.Close): calls see cause, and
// serve ends the connection without waiting for them.
func (c *conn) close(cause error) {
	c.draining.Store(true)
	// The socket first: a call that its cancellation ends at once must
	// not get an answer out before the close (its client would take a
	// Canceled for the call's own outcome instead of the closed
	// connection it is).
	_ = c.nc.Close()
	c.cancel(cause)
}
