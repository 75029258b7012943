package decodemodel

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicerpc/sluice/spi"
)

// serverConfig is what a server runs.
type serverConfig struct {
	model    Model
	codecs   []spi.Codec // a request names one by its index
	capacity int         // calls in flight per server; a request past it is refused before decode
	queue    int         // ModelWorkers: calls queued per connection (default 64)
	workers  int         // ModelWorkers: persistent workers (default GOMAXPROCS)
	hooks    *hooks      // probes only; nil otherwise
}

// hooks observe a server for the Cancel and Stop probes. They run on the
// server's goroutines and must not block.
type hooks struct {
	decodeStart func(id uint32)            // a decode begins
	decodeEnd   func(id uint32, err error) // a decode returned
	cancelRead  func(id uint32)            // the reader saw a Cancel frame (ModelQuanta: or its poll did)
}

var errLength = errors.New("decodemodel: decoded length differs from the declared one")

// server accepts connections on a loopback listener and serves requests
// with one model. Its counters are what the tables report.
type server struct {
	cfg      serverConfig
	ln       net.Listener
	root     context.Context // every call's context derives from it; Stop cancels it
	stopRoot context.CancelFunc
	exec     *executor // ModelWorkers only

	inflight atomic.Int64 // admitted calls not yet finished (the call capacity)

	decodes      atomic.Int64 // Decompress calls
	decodedBytes atomic.Int64 // bytes they returned
	refused      atomic.Int64

	mu       sync.Mutex
	idle     sync.Cond // signalled when inDecode drops to 0 while stopping
	conns    map[*serverConn]struct{}
	inDecode int
	stopping bool

	wg sync.WaitGroup // readers and call goroutines
}

// serverConn is one connection: its reader state, the cancellable calls
// it has registered, and the lock that serialises response writes.
type serverConn struct {
	s     *server
	c     net.Conn
	fr    *frameReader
	q     *callQueue // ModelWorkers
	poll  pollCtx    // ModelQuanta; owned by the reader
	wmu   sync.Mutex
	mu    sync.Mutex
	calls map[uint32]*call
}

// call is one admitted request. The reader creates it and hands it to the
// model; finish ends it exactly once.
type call struct {
	id       uint32
	sc       *serverConn
	ctx      context.Context
	cancel   context.CancelFunc // nil when not cancellable
	codec    spi.Codec
	declared int
	body     []byte // the compressed bytes, copied from the reader's buffer
}

func startServer(cfg serverConfig) (*server, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	if cfg.queue == 0 {
		cfg.queue = 64
	}
	if cfg.workers == 0 {
		cfg.workers = runtime.GOMAXPROCS(0)
	}
	s := &server{cfg: cfg, ln: ln, conns: map[*serverConn]struct{}{}}
	s.idle.L = &s.mu
	s.root, s.stopRoot = context.WithCancel(context.Background())
	if cfg.model == ModelWorkers {
		s.exec = startExecutor(cfg.workers, func(cl *call) {
			out, err := s.decode(cl, cl.ctx)
			s.spawnFinish(cl, out, err)
		})
	}
	s.wg.Add(1)
	go s.accept()
	return s, nil
}

func (s *server) addr() string { return s.ln.Addr().String() }

func (s *server) accept() {
	defer s.wg.Done()
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		sc := &serverConn{s: s, c: c, fr: newFrameReader(c), calls: map[uint32]*call{}}
		if s.exec != nil {
			sc.q = newCallQueue(s.cfg.queue)
		}
		sc.poll.sc = sc
		s.mu.Lock()
		if s.stopping {
			s.mu.Unlock()
			c.Close()
			return
		}
		s.conns[sc] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go sc.read()
	}
}

// read is the connection's reader goroutine.
func (sc *serverConn) read() {
	s := sc.s
	defer s.wg.Done()
	defer sc.c.Close()
	for {
		typ, id, body, err := sc.fr.next()
		if err != nil {
			return
		}
		switch typ {
		case frameCancel:
			if s.cfg.hooks != nil {
				s.cfg.hooks.cancelRead(id)
			}
			sc.cancelCall(id)
		case frameRequest, frameRequestCancellable:
			sc.request(id, typ == frameRequestCancellable, body)
		default:
			return // a protocol violation closes the connection
		}
	}
}

// request handles one Request frame on the reader: cheap validation and
// the capacity check first, so that a refused request costs no decode and
// no copy, whatever the model.
func (sc *serverConn) request(id uint32, cancellable bool, body []byte) {
	s := sc.s
	if len(body) < 2 || int(body[0]) >= len(s.cfg.codecs) {
		sc.reply(id, statusFailed)
		return
	}
	declared, k := binary.Uvarint(body[1:])
	if k <= 0 || declared > maxBody {
		sc.reply(id, statusFailed)
		return
	}
	if s.inflight.Add(1) > int64(s.cfg.capacity) {
		s.inflight.Add(-1)
		s.refused.Add(1)
		sc.reply(id, statusRefused)
		return
	}
	cl := &call{
		id: id, sc: sc, codec: s.cfg.codecs[body[0]], declared: int(declared),
		body: append([]byte(nil), body[1+k:]...),
	}
	if cancellable {
		cl.ctx, cl.cancel = context.WithCancel(s.root)
		sc.mu.Lock()
		sc.calls[id] = cl
		sc.mu.Unlock()
	} else {
		cl.ctx = s.root
	}
	switch s.cfg.model {
	case ModelCall:
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			out, err := s.decode(cl, cl.ctx)
			s.finish(cl, out, err)
		}()
	case ModelInline:
		out, err := s.decode(cl, cl.ctx)
		s.spawnFinish(cl, out, err)
	case ModelQuanta:
		sc.poll.Context = cl.ctx
		out, err := s.decode(cl, &sc.poll)
		sc.poll.Context = nil
		s.spawnFinish(cl, out, err)
	case ModelWorkers:
		if !s.exec.enqueue(sc.q, cl) {
			s.finish(cl, nil, context.Canceled)
		}
	case ModelNone:
		out, err := s.decode(cl, cl.ctx)
		s.finish(cl, out, err)
	}
}

func (sc *serverConn) cancelCall(id uint32) {
	sc.mu.Lock()
	cl := sc.calls[id]
	sc.mu.Unlock()
	if cl != nil {
		cl.cancel()
	}
}

// pollCtx is ModelQuanta's decode context: every Err check first polls
// the socket and applies the Cancel frames it holds. Only the reader uses
// it (the codec calls Err on the reader's goroutine).
type pollCtx struct {
	context.Context
	sc *serverConn
}

func (p *pollCtx) Err() error {
	p.sc.fr.poll(p.sc.pollCancel)
	return p.Context.Err()
}

func (sc *serverConn) pollCancel(id uint32) {
	if h := sc.s.cfg.hooks; h != nil {
		h.cancelRead(id)
	}
	sc.cancelCall(id)
}

// decode runs one Decompress with limit = the declared length. It refuses
// to start once the server is stopping.
func (s *server) decode(cl *call, ctx context.Context) ([]byte, error) {
	s.mu.Lock()
	if s.stopping {
		s.mu.Unlock()
		return nil, context.Canceled
	}
	s.inDecode++
	s.mu.Unlock()
	h := s.cfg.hooks
	if h != nil {
		h.decodeStart(cl.id)
	}
	out, err := cl.codec.Decompress(ctx, make([]byte, 0, cl.declared), cl.body, cl.declared)
	if err == nil && len(out) != cl.declared {
		err = errLength
	}
	if h != nil {
		h.decodeEnd(cl.id, err)
	}
	s.decodes.Add(1)
	s.decodedBytes.Add(int64(len(out)))
	s.mu.Lock()
	if s.inDecode--; s.inDecode == 0 && s.stopping {
		s.idle.Broadcast()
	}
	s.mu.Unlock()
	return out, err
}

func (s *server) spawnFinish(cl *call, out []byte, err error) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.finish(cl, out, err)
	}()
}

// finish is the handler and the end of a call: it runs once per admitted
// call, replies, and releases the call's capacity and registration.
func (s *server) finish(cl *call, out []byte, err error) {
	status := statusOK
	switch {
	case err == nil:
		var sum byte // the handler reads its message
		for i := 0; i < len(out); i += 512 {
			sum += out[i]
		}
		_ = sum
	case cl.ctx.Err() != nil:
		status = statusCancelled
	default:
		status = statusFailed
	}
	if cl.cancel != nil {
		cl.sc.mu.Lock()
		delete(cl.sc.calls, cl.id)
		cl.sc.mu.Unlock()
		cl.cancel()
	}
	s.inflight.Add(-1)
	cl.sc.reply(cl.id, status)
}

func (sc *serverConn) reply(id uint32, status byte) {
	var b [headerLen + 1]byte
	putHeader(b[:], frameResponse, id, 1)
	b[headerLen] = status
	sc.wmu.Lock()
	_, _ = sc.c.Write(b[:])
	sc.wmu.Unlock()
}

// stopTimes is what Stop measured from its start.
type stopTimes struct {
	decodes time.Duration // until no decode runs (and none can start)
	all     time.Duration // until every reader, worker and call goroutine ended
}

// Stop cancels every call, closes the listener and the connections, drops
// what ModelWorkers has queued, and waits for every goroutine it started.
func (s *server) Stop() stopTimes {
	t0 := time.Now()
	s.stopRoot()
	s.mu.Lock()
	s.stopping = true
	conns := make([]*serverConn, 0, len(s.conns))
	for sc := range s.conns {
		conns = append(conns, sc)
	}
	s.mu.Unlock()
	s.ln.Close()
	for _, sc := range conns {
		sc.c.Close()
	}
	if s.exec != nil {
		for _, cl := range s.exec.stop() {
			s.finish(cl, nil, context.Canceled)
		}
	}
	s.mu.Lock()
	for s.inDecode > 0 {
		s.idle.Wait()
	}
	s.mu.Unlock()
	var st stopTimes
	st.decodes = time.Since(t0)
	s.wg.Wait()
	st.all = time.Since(t0)
	return st
}
