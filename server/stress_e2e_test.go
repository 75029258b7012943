package server_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/kernel"
	"github.com/sluicerpc/sluice/limiters/concurrency"
	"github.com/sluicerpc/sluice/limiters/tokenbucket"
	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/server"
	"github.com/sluicerpc/sluice/spi"
)

// The end-to-end randomized stress test over real TCP (issue 11, item 13).
//
// Client workers, each on its own TCP connection (re-dialed now and then),
// pipeline small batches of unary and one-way calls to three methods of
// one service, most with a "tenant" metadata entry. An updater publishes
// random complete candidates through the server's admission (global,
// service and method concurrency and rates, the queue policy, a partition
// layer keyed by the tenant metadata) with Disable and Enable in between,
// and changes the call capacity and the connection bounds at random.
//
// The handlers record their holders per scope, with the generation that
// admitted them (CallInfo.Generation), and check the invariant of
// docs/admission.md: a scope never holds more than the bound of a program
// live during the grant, that is of the admitting generation's predecessor
// up to the generation current at the check (a shrink keeps its holders;
// a new grant above the new bound never happens). Holders of a program
// without a rule at a scope hold no unit there and are not counted; nor is,
// at a partition, a holder when a rule without partition concurrency was
// published between its generation and the check (a partition entry's
// states follow the current partition rule, so the request may have
// started under that one). Requests admitted while admission was disabled
// (generation 0) bypass it.
// The count of running handlers never exceeds the largest call capacity
// set, per server and per connection.
//
// Any unexpected outcome fails the test: an answer with another code than
// ResourceExhausted with an admission or capacity reason (Unavailable is
// expected only once Stop has begun), a connection that ends before Stop,
// a protocol violation or a handler panic counted by the server, a dial
// refused for a reason the server did not count. At the end, after Stop,
// every ledger is zero.

const (
	stressService = "stress"
	stressTenants = 4
)

var stressMethods = [...]string{"A", "B", "C"}

// Scopes whose holders the handlers count. Partition scopes are one per
// key: the tenants, then the default partition (no tenant).
const (
	scopeGlobal = iota
	scopeService
	scopeMethod0                                        // + index in stressMethods
	scopePartition0 = scopeMethod0 + len(stressMethods) // + tenant, stressTenants for the default
	scopeCount      = scopePartition0 + stressTenants + 1
)

// stressBounds are, per generation, the concurrency bound of every scope
// (0: no concurrency limit there, or admission disabled). The updater
// writes a generation's bounds before publishing it.
type stressBounds struct {
	gens [][scopeCount]atomic.Int64
	mu   sync.Mutex
	desc map[uint64]string // what each generation published, for failure reports
	// holders are the generations of each scope's current holders.
	holders [scopeCount]map[uint64]int
}

func (b *stressBounds) describe(gen uint64, d string) {
	b.mu.Lock()
	if b.desc == nil {
		b.desc = map[uint64]string{}
	}
	b.desc[gen] = d
	b.mu.Unlock()
}

// hold records a holder of scope admitted by gen (d = 1) or its end
// (d = -1), and returns the scope's holders and their generations.
func (b *stressBounds) hold(scope int, gen uint64, d int) (int64, string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.holders[scope] == nil {
		b.holders[scope] = map[uint64]int{}
	}
	b.holders[scope][gen] += d
	if b.holders[scope][gen] == 0 {
		delete(b.holders[scope], gen)
	}
	var n int64
	for _, c := range b.holders[scope] {
		n += int64(c)
	}
	if d < 0 {
		return n, ""
	}
	return n, fmt.Sprint(b.holders[scope])
}

func (b *stressBounds) report(scope int, lo, hi uint64) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out string
	for g := uint64(max(int64(lo)-3, 1)); g <= hi+1; g++ {
		out += fmt.Sprintf(" [%d] bound %d: %s;", g, b.gens[g][scope].Load(), b.desc[g])
	}
	return out
}

func (b *stressBounds) set(gen uint64, v [scopeCount]int64) {
	for i := range v {
		b.gens[gen][i].Store(v[i])
	}
}

// max returns the largest bound of scope over generations [lo-1, hi+1]:
// the programs that may have been live while a grant was decided and its
// holder counted (a commit precedes the generation number's increment).
func (b *stressBounds) max(scope int, lo, hi uint64) int64 {
	if lo > 0 {
		lo--
	}
	hi++
	var m int64
	for g := lo; g <= hi && g < uint64(len(b.gens)); g++ {
		m = max(m, b.gens[g][scope].Load())
	}
	return m
}

// always reports whether every generation in [lo, hi] bounds scope.
func (b *stressBounds) always(scope int, lo, hi uint64) bool {
	for g := lo; g <= hi && g < uint64(len(b.gens)); g++ {
		if b.gens[g][scope].Load() == 0 {
			return false
		}
	}
	return true
}

type stressFailures struct {
	n     atomic.Int64
	mu    sync.Mutex
	first []string
}

func (f *stressFailures) fail(format string, args ...any) {
	f.n.Add(1)
	f.mu.Lock()
	if len(f.first) < 5 {
		f.first = append(f.first, fmt.Sprintf(format, args...))
	}
	f.mu.Unlock()
}

func TestStressEndToEndOverTCP(t *testing.T) {
	const (
		seed     = 11_13
		workers  = 10
		duration = 2 * time.Second
		maxGens  = 4096
	)
	var (
		bounds  = &stressBounds{gens: make([][scopeCount]atomic.Int64, maxGens)}
		held    [scopeCount]atomic.Int64
		running atomic.Int64
		maxCap  atomic.Int64 // the largest per-server call capacity set
		// the largest per-connection call capacity set, and the handlers
		// running per connection (by the client's address)
		maxPerConn atomic.Int64
		perConnMu  sync.Mutex
		perConn    = map[string]int64{}
		failures   stressFailures
		srv        *server.Server
	)

	// The handler: count the holders of every scope the admitting
	// program bounds, check them, hold a little, uncount.
	mux := server.NewMux()
	for mi, name := range stressMethods {
		mux.HandleRaw(stressService, name, func(ctx context.Context, req []byte) ([]byte, error) {
			info, ok := server.CallInfoFromContext(ctx)
			if !ok {
				failures.fail("no CallInfo in the handler's context")
				return nil, nil
			}
			if r := running.Add(1); r > maxCap.Load() {
				failures.fail("%d handlers running, the largest per-server call capacity set is %d", r, maxCap.Load())
			}
			defer running.Add(-1)
			if p, ok := server.PeerFromContext(ctx); ok {
				addr := p.RemoteAddr.String()
				perConnMu.Lock()
				perConn[addr]++
				if n := perConn[addr]; n > maxPerConn.Load() {
					failures.fail("%d handlers running on one connection, the largest per-connection call capacity set is %d", n, maxPerConn.Load())
				}
				perConnMu.Unlock()
				defer func() {
					perConnMu.Lock()
					if perConn[addr]--; perConn[addr] == 0 {
						delete(perConn, addr)
					}
					perConnMu.Unlock()
				}()
			} else {
				failures.fail("no Peer in the handler's context")
			}
			var scopes [scopeCount]bool
			if gen := info.Generation; gen != 0 {
				part := scopePartition0 + stressTenants
				if v, ok := server.RequestMetadata(ctx).Get("tenant"); ok && len(v) == 2 && v[0] == 't' {
					part = scopePartition0 + int(v[1]-'0')
				}
				for _, s := range [...]int{scopeGlobal, scopeService, scopeMethod0 + mi, part} {
					if bounds.gens[gen][s].Load() == 0 {
						continue // no unit held there
					}
					if s == part && !bounds.always(s, gen, srv.Admission().Generation()) {
						// A partition entry's states follow the current
						// partition rule: a request of gen that started
						// under a later rule without a concurrency limit
						// holds no unit there.
						continue
					}
					scopes[s] = true
					held[s].Add(1)
					h, gens := bounds.hold(s, gen, 1)
					now := srv.Admission().Generation()
					if b := bounds.max(s, gen, now); h > b {
						failures.fail("over-admission at scope %d: %d holders (by generation %s), generation %d (current %d) allows at most %d: %s", s, h, gens, gen, now, b, bounds.report(s, gen, now))
					}
				}
			}
			if len(req) > 0 && req[0] > 0 {
				time.Sleep(time.Duration(req[0]) * 50 * time.Microsecond)
			}
			for s, ok := range scopes {
				if ok {
					held[s].Add(-1)
					bounds.hold(s, info.Generation, -1)
				}
			}
			return nil, nil
		})
	}

	// The first program is published by New (generation 1).
	rng := rand.New(rand.NewPCG(seed, 0))
	first, firstBounds := stressCandidate(rng)
	bounds.set(1, firstBounds)
	bounds.describe(1, describeOptions(&first))
	initialCap := server.CallCapacity{PerConnection: 8, PerServer: 32}
	maxCap.Store(int64(initialCap.PerServer))
	maxPerConn.Store(int64(initialCap.PerConnection))
	var err error
	srv, err = server.New(mux, server.Options{
		Admission:   &first,
		Calls:       initialCap,
		Connections: server.ConnectionLimits{MaxConnections: 64, MaxHandshakes: 16},
	})
	require.NoError(t, err)
	require.Equal(t, uint64(1), srv.Admission().Generation())
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	addr := l.Addr().String()

	var (
		stopping   atomic.Bool // Stop has begun: Unavailable and closed connections are expected
		stopUpdate = make(chan struct{})
		ops        atomic.Int64
		answered   atomic.Int64
		refusals   sync.Map // reason -> *atomic.Int64
		dialFailed atomic.Int64
	)
	countRefusal := func(reason string) {
		v, _ := refusals.LoadOrStore(reason, new(atomic.Int64))
		v.(*atomic.Int64).Add(1)
	}

	// The updater.
	var updater sync.WaitGroup
	updater.Go(func() {
		rng := rand.New(rand.NewPCG(seed, 1))
		k := srv.Admission()
		enabled := true
		for {
			select {
			case <-stopUpdate:
				return
			case <-time.After(time.Duration(5+rng.IntN(20)) * time.Millisecond):
			}
			switch x := rng.IntN(100); {
			case x < 15: // call capacity
				c := server.CallCapacity{PerConnection: 1 + rng.IntN(8), PerServer: 2 + rng.IntN(40)}
				maxCap.Store(max(maxCap.Load(), int64(c.PerServer)))
				maxPerConn.Store(max(maxPerConn.Load(), int64(c.PerConnection)))
				if err := srv.SetCallCapacity(c); err != nil {
					failures.fail("SetCallCapacity(%+v): %v", c, err)
				}
			case x < 25: // connection bounds
				mc := workers/2 + rng.IntN(workers*2)
				cl := server.ConnectionLimits{MaxConnections: mc, MaxHandshakes: 1 + rng.IntN(min(mc, 8))}
				if err := srv.SetConnectionLimits(cl); err != nil {
					failures.fail("SetConnectionLimits(%+v): %v", cl, err)
				}
			case x < 40 && enabled: // disable
				next := k.Generation() + 1
				if next >= maxGens {
					continue
				}
				bounds.set(next, [scopeCount]int64{})
				bounds.describe(next, "disabled")
				g, err := k.Disable()
				if err != nil || g != next {
					failures.fail("Disable: generation %d, %v (want %d)", g, err, next)
				}
				enabled = false
			default: // a random complete candidate
				next := k.Generation() + 1
				if next >= maxGens {
					continue
				}
				o, b := stressCandidate(rng)
				bounds.set(next, b)
				bounds.describe(next, describeOptions(&o))
				var g uint64
				var err error
				if enabled {
					g, err = k.Update(next-1, o)
				} else {
					g, err = k.Enable(o)
				}
				if err != nil || g != next {
					failures.fail("publish: generation %d, %v (want %d)", g, err, next)
					continue
				}
				enabled = true
			}
		}
	})

	// The workers.
	var work sync.WaitGroup
	for w := range workers {
		work.Go(func() {
			rng := rand.New(rand.NewPCG(seed, uint64(100+w)))
			for !stopping.Load() {
				sc, err := dialStress(addr)
				if err != nil {
					if !stopping.Load() {
						dialFailed.Add(1)
						time.Sleep(time.Millisecond)
					}
					continue
				}
				calls := 20 + rng.IntN(100)
				for i := 0; i < calls && !stopping.Load(); {
					n, err := sc.batch(rng, &ops, func(f *protocol.ErrorFrame) {
						switch {
						case f.Code == protocol.CodeResourceExhausted && stressReasons[f.Reason]:
							countRefusal(f.Reason)
						case f.Code == protocol.CodeUnavailable && stopping.Load():
						default:
							failures.fail("unexpected answer: %v %q reason %q", f.Code, f.Message, f.Reason)
						}
					}, &answered)
					i += n
					if err != nil {
						if !stopping.Load() {
							failures.fail("connection ended before Stop: %v", err)
						}
						break
					}
				}
				_ = sc.nc.Close()
			}
		})
	}

	time.Sleep(duration)
	close(stopUpdate)
	updater.Wait()
	stopping.Store(true)
	stopCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	require.NoError(t, srv.Stop(stopCtx))
	work.Wait()
	require.ErrorIs(t, <-served, server.ErrServerClosed)

	failures.mu.Lock()
	require.Zero(t, failures.n.Load(), "%d failures, first: %q", failures.n.Load(), failures.first)
	failures.mu.Unlock()

	st := srv.Stats()
	var refused []string
	refusals.Range(func(k, v any) bool {
		refused = append(refused, fmt.Sprintf("%s=%d", k, v.(*atomic.Int64).Load()))
		return true
	})
	t.Logf("generations=%d ops=%d answered=%d calls=%d refused=%v dials refused=%d (server: %d connection limit, %d handshake limit, %d per address)",
		srv.Admission().Generation(), ops.Load(), answered.Load(), st.Calls, refused, dialFailed.Load(), st.RefusedConnectionLimit, st.RefusedHandshakeLimit, st.RefusedHandshakePerAddress)
	require.Positive(t, st.Calls)
	require.NotEmpty(t, refused, "no refusal: the limits were never exercised")
	assert.Zero(t, st.ProtocolViolations)
	assert.Zero(t, st.HandlerPanics)
	assert.LessOrEqual(t, uint64(dialFailed.Load()), st.RefusedConnectionLimit+st.RefusedHandshakeLimit+st.RefusedHandshakePerAddress,
		"every refused dial is a bound's refusal the server counted")
	assert.Zero(t, st.HandshakeFailures)
	assert.Zero(t, st.AuthenticationFailures)

	// Every ledger is zero.
	requireLedgerZero(t, &testServer{Server: srv, addr: addr})
	assert.Zero(t, st.Connections)
	assert.Zero(t, st.Handshakes)
	assert.Zero(t, st.Admission.QueuedBytes)
	assert.Zero(t, st.Admission.LivePrograms, "Stop drains every program")
	for i := range held {
		assert.Zero(t, held[i].Load(), "scope %d", i)
	}
	assert.Zero(t, running.Load())
}

// stressReasons are the refusals a call may meet.
var stressReasons = map[string]bool{
	"concurrency": true, "rate": true, "queue_full": true, "queue_timeout": true,
	"partition_capacity": true, "call_capacity": true,
}

// stressCandidate draws a complete admission candidate and the
// concurrency bound it puts on each counted scope.
func stressCandidate(rng *rand.Rand) (kernel.Options, [scopeCount]int64) {
	var b [scopeCount]int64
	// rule draws a rule: a concurrency limit of 1..6 (plus extra) with
	// probability concurrencyOdds %, a token bucket with rateOdds %; n is
	// the concurrency limit, 0 if none.
	rule := func(concurrencyOdds, rateOdds int, extra int64) (r kernel.Rule, n int64, ok bool) {
		if rng.IntN(100) < concurrencyOdds {
			n = int64(1+rng.IntN(6)) + extra
			r.Limits = append(r.Limits, concurrency.Spec(n))
		}
		if rng.IntN(100) < rateOdds {
			r.Limits = append(r.Limits, tokenbucket.Spec(int64(5+rng.IntN(50)), int64(1+rng.IntN(20)), time.Duration(1+rng.IntN(20))*time.Millisecond))
		}
		return r, n, len(r.Limits) > 0
	}
	var o kernel.Options
	// A looser global bound lets the inner scopes bind too.
	if r, n, ok := rule(50, 20, 6); ok {
		o.Global, b[scopeGlobal] = r, n
	}
	if r, n, ok := rule(40, 20, 0); ok {
		o.Services, b[scopeService] = map[string]kernel.Rule{stressService: r}, n
	}
	for i, m := range stressMethods {
		if r, n, ok := rule(40, 25, 0); ok {
			if o.Methods == nil {
				o.Methods = map[string]kernel.Rule{}
			}
			o.Methods[stressService+"/"+m], b[scopeMethod0+i] = r, n
		}
	}
	if rng.IntN(2) == 0 {
		o.Queue = kernel.QueuePolicy{
			MaxQueuedCalls:   1 + rng.IntN(16),
			MaxQueuedBytes:   int64(64 + rng.IntN(1024)),
			MaxQueueDelay:    time.Duration(1+rng.IntN(5)) * time.Millisecond,
			QueueOneWayCalls: rng.IntN(2) == 0,
		}
	}
	if rng.IntN(100) < 60 || (len(o.Global.Limits) == 0 && o.Services == nil && o.Methods == nil) {
		r, n, ok := rule(70, 40, 0)
		if !ok {
			r, n = kernel.Rule{Limits: []spi.Spec{concurrency.Spec(1)}}, 1
		}
		for k := range stressTenants + 1 {
			b[scopePartition0+k] = n
		}
		o.Partition = &kernel.PartitionPolicy{
			Selector:      kernel.Selector{Name: "tenant", Version: 1, Key: tenantKey},
			MaxPartitions: 1 + rng.IntN(stressTenants+1),
			IdleTimeout:   time.Duration(10+rng.IntN(200)) * time.Millisecond,
			Rule:          r,
		}
	}
	return o, b
}

func tenantKey(f kernel.Facts) (string, bool) {
	if f.Metadata == nil {
		return "", false
	}
	return f.Metadata.Get("tenant")
}

// stressConn is one worker's connection: serial batches of pipelined
// requests.
type stressConn struct {
	nc     net.Conn
	rd     *protocol.Reader
	ack    protocol.HandshakeAck
	routes [len(stressMethods)][2]uint16
	nextID uint64
	frame  []byte
}

var errStressHandshake = errors.New("handshake refused")

func dialStress(addr string) (*stressConn, error) {
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		return nil, err
	}
	sc := &stressConn{nc: nc, rd: protocol.NewReader(nc, protocol.DefaultLimits())}
	frame, err := protocol.AppendHandshake(nil, &protocol.Handshake{Version: protocol.Version, Capabilities: protocol.CapOneWay | protocol.CapCancel, MaxFrameSize: 1 << 20})
	if err != nil {
		panic(err)
	}
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := nc.Write(frame); err != nil {
		_ = nc.Close()
		return nil, err
	}
	h, payload, err := sc.rd.ReadFrame()
	if err != nil || h.Type != protocol.FrameHandshakeAck {
		_ = nc.Close()
		return nil, fmt.Errorf("%w: %v %v", errStressHandshake, h.Type, err)
	}
	if err := protocol.ParseHandshakeAck(h, payload, &sc.ack); err != nil {
		_ = nc.Close()
		return nil, err
	}
	for si, svc := range sc.ack.Services {
		if svc.Name != stressService {
			continue
		}
		for mi, m := range svc.Methods {
			for i, name := range stressMethods {
				if m == name {
					sc.routes[i] = [2]uint16{uint16(si), uint16(mi)}
				}
			}
		}
	}
	return sc, nil
}

// batch sends 1..4 requests at once (random method, tenant, hold time,
// one-way or not) and reads the answers of the unary ones, passing each
// Error frame to onError. It returns the number of requests sent.
func (sc *stressConn) batch(rng *rand.Rand, ops *atomic.Int64, onError func(*protocol.ErrorFrame), answered *atomic.Int64) (int, error) {
	n := 1 + rng.IntN(4)
	unary := 0
	sc.frame = sc.frame[:0]
	for range n {
		m := rng.IntN(len(stressMethods))
		req := protocol.Request{Service: sc.routes[m][0], Method: sc.routes[m][1], Body: []byte{byte(rng.IntN(4))}}
		if rng.IntN(8) == 0 {
			req.OneWay = true
		} else {
			req.Cancellable = true
			unary++
		}
		switch t := rng.IntN(stressTenants + 2); {
		case t < stressTenants:
			_ = req.Metadata.Add("tenant", []byte{'t', byte('0' + t)})
		case t == stressTenants:
			_ = req.Metadata.Add("other", []byte("x")) // metadata, no tenant: the default partition
		}
		sc.nextID++
		var err error
		if sc.frame, err = protocol.AppendRequest(sc.frame, sc.nextID, &req); err != nil {
			panic(err)
		}
		ops.Add(1)
	}
	_ = sc.nc.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := sc.nc.Write(sc.frame); err != nil {
		return n, err
	}
	lim := protocol.DefaultLimits()
	for unary > 0 {
		h, payload, err := sc.rd.ReadFrame()
		if err != nil {
			return n, err
		}
		switch h.Type {
		case protocol.FrameResponse:
			unary--
			answered.Add(1)
		case protocol.FrameError:
			var f protocol.ErrorFrame
			if err := protocol.ParseError(h, payload, lim, &f); err != nil {
				return n, err
			}
			if h.ID == 0 {
				return n, fmt.Errorf("connection-level error: %v %s", f.Code, f.Message)
			}
			unary--
			answered.Add(1)
			onError(&f)
		case protocol.FrameGoAway:
			var g protocol.GoAway
			_ = protocol.ParseGoAway(h, payload, &g)
			onError(&protocol.ErrorFrame{Code: protocol.CodeUnavailable, Message: "GoAway: " + g.Message})
		case protocol.FramePing:
			data, err := protocol.ParsePing(h, payload)
			if err != nil {
				return n, err
			}
			if _, err := sc.nc.Write(protocol.AppendPong(nil, data)); err != nil {
				return n, err
			}
		default:
			return n, fmt.Errorf("unexpected %v frame", h.Type)
		}
	}
	return n, nil
}

func describeOptions(o *kernel.Options) string {
	d := fmt.Sprintf("global %v services %v methods %v queue %+v", o.Global.Limits, o.Services, o.Methods, o.Queue)
	if p := o.Partition; p != nil {
		d += fmt.Sprintf(" partition max %d idle %v %v", p.MaxPartitions, p.IdleTimeout, p.Rule.Limits)
	}
	return d
}
