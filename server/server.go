package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicerpc/sluice/kernel"
	"github.com/sluicerpc/sluice/kernel/governor"
	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/server/internal/conngate"
	"github.com/sluicerpc/sluice/spi"
)

// Server serves the methods of a Mux on any number of listeners.
//
// Its admission policy (Admission) and its bounds (SetConnectionLimits,
// SetCallCapacity) change at runtime without cancelling running calls.
// Stop shuts down gracefully, Close at once.
type Server struct {
	o       resolved
	methods [][]method // by service id, then method id
	// ack is the HandshakeAck every client gets (without codecs), its
	// frame encoded once per change of the call capacity it advertises
	// (acks). A client that offers codecs the server accepts gets it with
	// those codecs, encoded for its connection.
	ack  protocol.HandshakeAck
	acks atomic.Pointer[ackState]

	// setMu serializes SetCallCapacity (and SetConnectionLimits), so
	// that concurrent callers never leave a mix of two values; callCap
	// is the capacity in force, guarded by it.
	setMu   sync.Mutex
	callCap CallCapacity

	kernel   *kernel.Kernel
	gate     *conngate.Gate
	calls    *governor.CallCapacity // per server
	connCaps *governor.ConnCapacities
	// frameBudget bounds the bytes held for large request frames over
	// all connections (Options.MaxFrameMemory).
	frameBudget *protocol.FrameBudget
	// governor bounds what compressed requests cost (Options.Governor);
	// comp is the compression in force (SetCompression);
	// streamWindow the stream window (SetStreamWindow).
	governor     *governor.Governor
	comp         atomic.Pointer[compression]
	streamWindow atomic.Int64
	nmethods     int

	ctx    context.Context // cancelled by Close: ends every call
	cancel context.CancelFunc

	mu        sync.Mutex
	listeners map[net.Listener]struct{}
	conns     map[*conn]struct{}
	draining  bool
	closed    bool
	connWG    sync.WaitGroup // one per connection goroutine
	// admitting counts accepted connections on their way through admit;
	// admissionsDone, when not nil, is closed when it drops to zero
	// (Stop waits for it). Both guarded by mu.
	admitting      int
	admissionsDone chan struct{}

	nextConnID atomic.Uint64
	stats      counters
	metrics    *serverMetrics // nil without Options.MeterProvider
	refusals   refusalLog
	acceptErrs acceptErrorLog
	reqRefused *requestRefusalLog
	reclaim    *periodic // the kernel's idle reclaim (reclaim_idle.go)
	hooks      atomic.Pointer[hooks]
}

// method is one registered method, resolved for the request path.
type method struct {
	id     kernel.MethodID
	full   string
	invoke invoker
	// pos is the method's position among all the server's methods: its
	// response policy is compression.policies[pos].
	pos int
	// kind is the method's shape; stream is the handler of a stream
	// method (invoke that of a unary one).
	kind   streamKind
	stream streamInvoker
}

// New builds a server for the methods registered on mux. mux must not be
// changed afterwards.
func New(mux *Mux, o Options) (*Server, error) {
	r, err := o.resolve()
	if err != nil {
		return nil, err
	}
	if mux == nil || len(mux.services) == 0 {
		return nil, errors.New("server: the Mux has no method")
	}
	mux.frozen = true

	var cat kernel.CatalogBuilder
	s := &Server{o: r, listeners: map[net.Listener]struct{}{}, conns: map[*conn]struct{}{}}
	ack := protocol.HandshakeAck{
		Version:            protocol.Version,
		Capabilities:       protocol.CapCancel | protocol.CapOneWay | protocol.CapKeepalive | protocol.CapStreaming,
		MaxFrameSize:       r.limits.MaxFrameSize,
		MaxMetadataBytes:   r.limits.MaxMetadataBytes,
		MaxConcurrentCalls: uint32(r.Calls.PerConnection),
	}
	if r.KeepaliveInterval > 0 {
		ack.KeepaliveInterval = r.KeepaliveInterval
	}
	for _, svc := range mux.services {
		info := protocol.ServiceInfo{Name: svc.name}
		var ms []method
		for _, m := range svc.methods {
			id, err := cat.Add(svc.name, m.name)
			if err != nil {
				return nil, err
			}
			info.Methods = append(info.Methods, m.name)
			full := svc.name + "/" + m.name
			ms = append(ms, method{id: id, full: full, invoke: m.invoke, pos: s.nmethods, kind: m.kind, stream: m.stream})
			s.nmethods++
		}
		ack.Services = append(ack.Services, info)
		s.methods = append(s.methods, ms)
	}
	if entries := len(ack.Services) + s.nmethods; entries > protocol.MaxAckEntries {
		return nil, fmt.Errorf("server: the Mux has %d services and methods; the HandshakeAck announces at most %d (protocol.MaxAckEntries)", entries, protocol.MaxAckEntries)
	}
	s.ack, s.callCap = ack, r.Calls
	if err := s.encodeAck(); err != nil {
		return nil, err
	}
	if s.kernel, err = kernel.New(kernel.Config{Catalog: cat.Build(), Clock: r.Clock, Registry: r.Registry}); err != nil {
		return nil, err
	}
	if s.gate, err = conngate.New(r.gate); err != nil {
		return nil, err
	}
	s.refusals = refusalLog{logger: r.Logger, clock: r.Clock, gate: s.gate}
	s.reqRefused = newRequestRefusalLog(r.Logger, &s.stats)
	s.reclaim = newIdleReclaim(s)
	if s.refusals.clock == nil {
		s.refusals.clock = spi.NewMonotonicClock()
	}
	s.acceptErrs = acceptErrorLog{logger: r.Logger, clock: s.refusals.clock}
	if a := r.Admission; a != nil {
		if _, err := s.kernel.Enable(*a); err != nil {
			return nil, fmt.Errorf("server: Options.Admission: %w", err)
		}
	}
	cp, err := s.newCompression(o.Compression)
	if err != nil {
		return nil, err
	}
	s.comp.Store(cp)
	s.streamWindow.Store(int64(r.StreamWindow))
	if s.governor, err = governor.New(r.Governor); err != nil {
		return nil, fmt.Errorf("server: Options.Governor: %w", err)
	}
	s.calls = governor.NewCallCapacity(r.Calls.PerServer)
	s.connCaps = governor.NewConnCapacities(r.Calls.PerConnection)
	s.frameBudget = protocol.NewFrameBudget(r.MaxFrameMemory)
	if mp := r.MeterProvider; mp != nil {
		if s.metrics, err = newServerMetrics(mp, s); err != nil {
			return nil, fmt.Errorf("server: Options.MeterProvider: %w", err)
		}
	}
	s.ctx, s.cancel = context.WithCancel(context.Background())
	return s, nil
}

// Admission returns the server's admission kernel: Enable, Update, Disable
// its policy at runtime. Method names in its options are
// "service/method". Stop seals it.
func (s *Server) Admission() *kernel.Kernel { return s.kernel }

// SetConnectionLimits changes the connection bounds live; zero fields take
// their defaults as in Options.Connections (see ConnectionLimits), and
// invalid limits change nothing and return an error naming the field.
// Lowering them closes nothing: connections over the new bounds are
// refused until the counts are under them; a connection admitted before
// gives back what it took.
func (s *Server) SetConnectionLimits(l ConnectionLimits) error {
	g, err := l.gateLimits()
	if err != nil {
		return err
	}
	s.setMu.Lock()
	defer s.setMu.Unlock()
	return s.gate.SetLimits(g)
}

// ConnectionLimits returns the connection bounds in force (defaults
// filled in: MaxConnections, MaxHandshakes and MaxHandshakesPerAddress
// are all set).
func (s *Server) ConnectionLimits() ConnectionLimits {
	g := s.gate.Limits()
	return ConnectionLimits{MaxConnections: g.MaxConnections, MaxHandshakes: g.MaxHandshakes, MaxHandshakesPerAddress: g.MaxHandshakesPerAddress}
}

// CallCapacity returns the call capacity in force, as last given to New
// or SetCallCapacity, defaults filled in.
func (s *Server) CallCapacity() CallCapacity {
	s.setMu.Lock()
	defer s.setMu.Unlock()
	return s.callCap
}

// encodeAck encodes the HandshakeAck with the per-connection call capacity
// in force. s.setMu held (or s not shared yet).
func (s *Server) encodeAck() error {
	s.ack.MaxConcurrentCalls = uint32(s.callCap.PerConnection)
	frame, err := protocol.AppendHandshakeAck(nil, &s.ack)
	if err != nil {
		return err
	}
	s.acks.Store(&ackState{ack: s.ack, frame: frame})
	return nil
}

// ackState is the HandshakeAck in force and its frame without codecs.
type ackState struct {
	ack   protocol.HandshakeAck
	frame []byte
}

// ackFor returns the HandshakeAck frame for a client that offered codecs
// (already chosen: the accepted part of the offer, in its order).
func (s *Server) ackFor(codecs []spi.Codec) ([]byte, error) {
	st := s.acks.Load()
	if len(codecs) == 0 {
		return st.frame, nil
	}
	a := st.ack
	a.Capabilities |= protocol.CapCompression
	a.Codecs = make([]string, len(codecs))
	for i, c := range codecs {
		a.Codecs[i] = c.Name()
	}
	return protocol.AppendHandshakeAck(nil, &a)
}

// SetCallCapacity changes the call capacity live, per connection (every
// live connection and new ones) and per server. Lowering it cancels
// nothing: new calls are refused with ResourceExhausted (reason
// "call_capacity") until the active and reserved calls are under the new
// bound. Zero fields select the defaults, as in Options.Calls.
func (s *Server) SetCallCapacity(c CallCapacity) error {
	if err := c.validate(); err != nil {
		return err
	}
	s.setMu.Lock()
	defer s.setMu.Unlock()
	return s.setCallCapacityLocked(c.withDefaults())
}

// setCallCapacityLocked sets a validated capacity, defaults filled in;
// s.setMu held.
func (s *Server) setCallCapacityLocked(c CallCapacity) error {
	s.connCaps.SetCapacity(c.PerConnection)
	s.calls.SetCapacity(c.PerServer)
	s.callCap = c
	// Clients that connect from now on are told the new capacity;
	// connected ones keep the value of their handshake (the server
	// enforces the one in force either way).
	return s.encodeAck()
}

// SetGovernorLimits changes the governor's bounds live (zero fields select
// the defaults, as in Options.Governor; invalid limits change nothing and
// return an error naming the field). Lowering a bound revokes nothing:
// requests that hold more than it keep what they hold, and new ones wait
// (decodes) or are refused with ResourceExhausted (the byte budgets) until
// the usage is under it.
func (s *Server) SetGovernorLimits(l governor.Limits) error {
	s.setMu.Lock()
	defer s.setMu.Unlock()
	return s.governor.SetLimits(l)
}

// GovernorLimits returns the governor's bounds in force.
func (s *Server) GovernorLimits() governor.Limits { return s.governor.Limits() }

// Serve accepts connections on l until Stop or Close (then it returns
// ErrServerClosed) or until Accept fails permanently (then it returns that
// error). Connections over the connection bounds (ConnectionLimits, the
// per-address one keyed by the remote address's IP) are closed in the
// accept loop itself, before any goroutine or buffer exists for them,
// counted per reason and logged (rate-limited).
func (s *Server) Serve(l net.Listener) error {
	if !s.track(l) {
		_ = l.Close()
		return ErrServerClosed
	}
	defer s.untrack(l)
	s.reqRefused.start(s.ctx)
	s.reclaim.start(s.ctx)
	s.logServing(l.Addr().String())
	var backoff time.Duration
	for {
		nc, err := l.Accept()
		if err != nil {
			if s.isClosing() {
				return ErrServerClosed
			}
			if acceptRetryable(err) { // accept_errors.go
				backoff = acceptBackoff(backoff)
				s.stats.acceptErrors.Add(1)
				s.acceptErrs.failed(err, l.Addr().String(), backoff)
				time.Sleep(backoff)
				continue
			}
			return err
		}
		backoff = 0
		if !s.beginAdmission() {
			_ = nc.Close() // Stop or Close began: nothing is admitted
			return ErrServerClosed
		}
		s.admit(nc)
		s.endAdmission()
	}
}

// admit runs an accepted connection through the connection bounds and
// starts it, or closes it; beginAdmission and endAdmission bracket it, so
// that Stop knows when no connection can appear any more.
func (s *Server) admit(nc net.Conn) {
	c := &conn{s: s, nc: nc, ended: make(chan struct{})}
	if r := c.slot.AdmitFrom(s.gate, conngate.SourceAddr(nc.RemoteAddr())); r != conngate.ReasonNone {
		// Counted by the gate, per reason (Stats); a plaintext client
		// is told why.
		s.writeAcceptRefusal(nc, r)
		_ = nc.Close()
		s.refusals.refused(r, nc.RemoteAddr())
		return
	}
	if hk := s.hooks.Load(); hk != nil && hk.afterAdmit != nil {
		hk.afterAdmit()
	}
	c.init()
	if !s.register(c) {
		c.slot.Release()
		_ = nc.Close()
		return
	}
	c.logAccepted()
	go c.serve()
}

// beginAdmission counts an accepted connection on its way through admit,
// unless the server is stopping; endAdmission uncounts it and, with the
// last one, wakes a Stop waiting for admissions to end.
func (s *Server) beginAdmission() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.draining || s.closed {
		return false
	}
	s.admitting++
	return true
}

func (s *Server) endAdmission() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.admitting--
	if s.admitting == 0 && s.admissionsDone != nil {
		close(s.admissionsDone)
		s.admissionsDone = nil
	}
}

// admissionsEnded returns a channel closed once no accepted connection is
// on its way through admit; after shutDown none can start.
func (s *Server) admissionsEnded() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.admitting == 0 {
		return closedChan
	}
	if s.admissionsDone == nil {
		s.admissionsDone = make(chan struct{})
	}
	return s.admissionsDone
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func (s *Server) track(l net.Listener) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.draining || s.closed {
		return false
	}
	s.listeners[l] = struct{}{}
	return true
}

func (s *Server) untrack(l net.Listener) {
	s.mu.Lock()
	delete(s.listeners, l)
	s.mu.Unlock()
}

func (s *Server) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

func (s *Server) isClosing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.draining || s.closed
}

// register adds c to the live connections unless the server is stopping.
func (s *Server) register(c *conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.draining || s.closed {
		return false
	}
	s.conns[c] = struct{}{}
	s.connWG.Add(1)
	return true
}

func (s *Server) unregister(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	s.connWG.Done()
}

// Stop shuts the server down gracefully: it stops accepting, seals
// admission (queued requests end with Unavailable, new requests are
// answered Unavailable), sends GoAway with the last accepted request id on
// every connection, lets the calls in flight finish, and closes the
// connections. It returns once no accepted connection is still on its way
// through admission, so that no connection (not even one accepted as Stop
// began) and no connection or handshake slot outlives it. When the work is
// done as ctx ends, Stop reports success. If ctx ends first, Stop closes everything as
// Close does and returns ctx's error: Stop is bounded by ctx even when a
// peer never reads (the GoAway never waits for buffer space, and blocked
// flushes end with the close). Stop may be called more than once.
func (s *Server) Stop(ctx context.Context) error {
	defer s.metrics.close()
	conns := s.shutDown(false)
	start := time.Now()
	s.logStopBegun(len(conns))

	s.kernel.Seal()
	// Draining a connection queues its GoAway and, when no call is in
	// flight, flushes and closes it: a peer that does not read can hold
	// that flush, so it runs beside Stop, which stays bounded by ctx.
	var drains sync.WaitGroup
	for _, c := range conns {
		drains.Go(c.drain)
	}
	done := make(chan struct{})
	if len(conns) == 0 {
		close(done) // no connection to wait for
	} else {
		go func() {
			s.connWG.Wait()
			drains.Wait()
			close(done)
		}()
	}
	if !awaitOrDone(ctx, done) {
		s.logStopForced(start, ctx.Err())
		_ = s.Close() // closes every connection: blocked writes fail
		<-done
		return ctx.Err()
	}
	// A connection an accept loop admitted as Stop began is closed by
	// that loop, which no longer registers it: wait for those admissions
	// to end, so that no connection and no slot outlives Stop.
	served := s.admissionsEnded()
	if !awaitOrDone(ctx, served) {
		s.logStopForced(start, ctx.Err())
		_ = s.Close()
		return ctx.Err()
	}
	s.cancel()
	s.reqRefused.stop()
	s.reclaim.stop()
	if awaitOrDone(ctx, s.kernel.Drained()) {
		err := s.kernel.Drain(context.Background()) // drained: returns at once
		s.logStopped(start)
		return err
	}
	s.logStopForced(start, ctx.Err())
	return ctx.Err()
}

// awaitOrDone waits until ch is closed or ctx ends and reports whether ch
// is closed; when both happened, completion wins, so that a Stop whose
// work was done as its context ended reports success.
func awaitOrDone(ctx context.Context, ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	case <-ctx.Done():
		select {
		case <-ch:
			return true
		default:
			return false
		}
	}
}

// Close closes every listener and connection at once; calls in flight see
// their context cancelled and their responses are dropped. It waits for
// the connections' goroutines to end. Close may be called more than once.
func (s *Server) Close() error {
	defer s.metrics.close()
	conns := s.shutDown(true)
	s.kernel.Seal()
	// Connections first (each closes its socket, then cancels its calls),
	// so that no call ended by Close answers before its connection is
	// gone; then every other context of the server.
	for _, c := range conns {
		c.close(errServerClosing)
	}
	s.cancel()
	s.connWG.Wait()
	s.reqRefused.stop()
	s.reclaim.stop()
	s.logClosed(len(conns))
	return nil
}

// shutDown marks the server draining (and closed, for Close), closes the
// listeners and returns the live connections.
func (s *Server) shutDown(closing bool) []*conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.draining = true
	if closing {
		s.closed = true
	}
	for l := range s.listeners {
		_ = l.Close()
	}
	conns := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		conns = append(conns, c)
	}
	return conns
}

// errServerClosing is the cause of the calls Close ends.
var errServerClosing = errors.New("server: closing")
