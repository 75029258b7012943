package server

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	"github.com/sluicerpc/sluice/codecs"
	"github.com/sluicerpc/sluice/kernel"
	"github.com/sluicerpc/sluice/kernel/governor"
	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/server/internal/conngate"
	"github.com/sluicerpc/sluice/spi"
	"go.opentelemetry.io/otel/metric"
)

// Options configure a Server. The zero value of each field selects its
// default.
type Options struct {
	// TLS, when not nil, makes the server speak TLS on every accepted
	// connection. Set ClientAuth and ClientCAs for client certificates.
	TLS *tls.Config

	// Authenticator turns the handshake's authentication payload (and
	// the TLS state) into an identity; nil accepts every client with an
	// empty identity.
	Authenticator Authenticator

	// Connections bounds live connections, connections still in
	// handshake, and connections still in handshake from one source
	// address (defaults 1024, 64 and 8); changeable with
	// SetConnectionLimits.
	Connections ConnectionLimits

	// Calls bounds calls per connection and per server (active plus
	// reserved), one-way calls included; changeable with
	// SetCallCapacity. Zero fields select DefaultCallsPerConnection and
	// DefaultCallsPerServer (docs/server.md states the memory they
	// bound).
	Calls CallCapacity

	// Admission, when not nil, is the first admission program: New
	// enables it before it returns, so that no request, not even one on
	// the first connection Serve accepts, bypasses admission. Options it
	// rejects make New fail. Nil leaves admission disabled (every request
	// admitted) until Admission().Enable. Method names are
	// "service/method".
	Admission *kernel.Options

	// Limits are the protocol limits the server accepts (frame size,
	// metadata); protocol.DefaultLimits() by default. Its MaxDecodedSize,
	// when Limits is set, bounds decoded request bodies together with
	// Compression.MaxDecodedSize (the smaller wins); a request declaring
	// more is refused on its call, not as a violation.
	Limits *protocol.Limits

	// Compression is what the server accepts and answers with: the
	// profiles it accepts (a connection's HandshakeAck lists those of the
	// client's offer, in the client's order; a request's codec id is the
	// 1-based position there), the policy for compressing responses (per
	// method), and the bounds on decoding requests (MaxDecodedSize, the
	// expansion-ratio bound). A response is compressed only with the
	// first profile of the client's offer that the server accepts. The
	// zero value accepts codecs.Builtin() with codecs.DefaultPolicy;
	// Compression.Off accepts nothing (a compressed request is refused
	// on its call).
	Compression codecs.Config

	// Governor bounds, server-wide and whatever the admission policy,
	// what compressed requests cost: decodes running at once, compressed
	// bytes retained by calls not yet decoded, decoded bytes in flight
	// (docs/governor.md). Zero fields select governor.DefaultLimits();
	// changeable with SetGovernorLimits.
	Governor governor.Limits

	// HandshakeTimeout bounds TLS plus the protocol handshake plus
	// authentication, from Accept to the HandshakeAck (default 10s; must
	// not be negative). A connection that has not finished by then is
	// closed and counted in Stats().HandshakeFailures; until then it holds
	// a handshake slot and one of its source address's, so the timeout is
	// how long a peer that stalls can hold them.
	HandshakeTimeout time.Duration

	// KeepaliveInterval: when nothing arrived on a connection for this
	// long the server sends a Ping, and closes the connection when
	// nothing arrives for another interval (default 30s; negative
	// disables keepalive).
	KeepaliveInterval time.Duration

	// IdleTimeout closes, with a GoAway, a connection that had no call in
	// flight and received no frame for this long (default 5 min;
	// negative disables).
	IdleTimeout time.Duration

	// WriteBufferSize bounds the frames pending on a connection before a
	// responder blocks (protocol.DefaultWriteBufferSize by default). When
	// the unsent frames reach it, the server stops reading requests from
	// that connection until the client reads (backpressure on that
	// connection only).
	WriteBufferSize int

	// StreamWindow is the receive window of each stream once its handler
	// starts (docs/streaming.md): the server grows the stream's window
	// from protocol.InitialStreamWindow (64 KiB, all a client may send
	// before its stream is admitted) to it with a WindowUpdate (default
	// protocol.DefaultStreamWindow, 256 KiB; at least
	// InitialStreamWindow, at most protocol.MaxWindow). A slow handler
	// holds less than this plus one message; the connection's window
	// (1 MiB) bounds all the streams of a connection together.
	StreamWindow int

	// WriteTimeout closes a connection whose writes make no progress for
	// this long: a client that stops reading cannot hold its responses,
	// goroutines and buffers forever (default 20s; negative disables).
	WriteTimeout time.Duration

	// StreamStallTimeout ends a stream whose Send has waited this long
	// for the client to open its window (the stream's or the
	// connection's): a client that opens streams and never returns
	// credit, while it answers pings, cannot hold their call slots,
	// goroutines and buffers forever. The Send fails, the handler's
	// context is cancelled, and the client gets ResourceExhausted naming
	// the timeout; Stats().StreamStalls counts them (default 30s;
	// negative disables).
	StreamStallTimeout time.Duration

	// MaxFrameMemory bounds the bytes the server holds, over all
	// connections, for request frames larger than the 4 KiB read-ahead:
	// from their first byte while they arrive, and for requests until
	// their call ends. A frame that cannot be held closes its connection
	// with ResourceExhausted (default DefaultMaxFrameMemory; at least the
	// maximum frame size).
	MaxFrameMemory int64

	// Clock is the admission kernel's clock, and the clock of the rate
	// limit of the connection refusal log lines; nil means
	// spi.NewMonotonicClock().
	Clock spi.Clock

	// Registry resolves limiter kinds named in admission options; nil
	// means spi.DefaultRegistry.
	Registry *spi.Registry

	// MeterProvider, when not nil, receives the server's metrics
	// (docs/observability.md): the RPC call duration and sizes per method
	// and status code, recorded without allocation, and sluice's own
	// counters and gauges (admission, queue, scopes, generations,
	// connections, call capacity, governor, codecs), observed from Stats
	// at collection time. New creates every instrument once; Stop and
	// Close unregister the observations. nil means no metrics: no
	// instrument, no clock read per call.
	MeterProvider metric.MeterProvider

	// Logger receives connection-level events; nil discards them.
	// Connections refused at accept are logged at Warn, at most one line
	// per refusal reason per 10 s, with the number refused since the
	// previous line of that reason.
	Logger *slog.Logger
}

// ConnectionLimits bound connections: MaxConnections live accepted
// connections (default 1024), MaxHandshakes of them still in handshake
// (TLS, protocol handshake, authentication; default 64, at most
// MaxConnections) and MaxHandshakesPerAddress of those from one source
// address (default 8, at most MaxHandshakes), so that one peer cannot take
// every handshake slot. Over any bound a connection is closed right after
// Accept, with no goroutine started for it, and counted per reason in
// Stats ("connection_limit", "handshake_limit", "handshake_per_address").
//
// A zero field takes its default; when only a larger bound is set, the
// smaller ones default to at most it (MaxConnections 10 alone gives
// MaxHandshakes 10 and MaxHandshakesPerAddress 8; MaxHandshakes 4 alone
// gives MaxHandshakesPerAddress 4). A negative value, or an explicit value
// above the bound that contains it, is an error naming the field.
//
// The source address is the peer's IP without its port: an IPv4 address
// (an IPv4-mapped IPv6 address counts as its IPv4 address) or the /64 of
// an IPv6 address, since a single host can use every address of its /64.
// Connections without an IP address (Unix sockets, in-memory pipes) are
// bounded by MaxHandshakes only. Behind a proxy or load balancer that
// does not preserve client addresses every client shares the proxy's
// address: set MaxHandshakesPerAddress to MaxHandshakes there, which
// leaves MaxHandshakes as the only handshake bound.
type ConnectionLimits struct {
	MaxConnections          int
	MaxHandshakes           int
	MaxHandshakesPerAddress int
}

// CallCapacity bounds active plus reserved calls per connection and per
// server, one-way calls included. Zero selects DefaultCallsPerConnection
// and DefaultCallsPerServer; at most governor.MaxCallCapacity.
type CallCapacity struct {
	PerConnection int
	PerServer     int
}

// The default bounds. Every call in flight costs a goroutine (an 8 KiB
// stack at least), the pooled call (about 1 KiB) and its request payload:
// up to the 4 KiB read-ahead copied, or a larger one charged to
// MaxFrameMemory. docs/server.md adds it up: about 40 MiB of calls, plus
// MaxFrameMemory, plus the connections' buffers.
const (
	DefaultCallsPerConnection = 256
	DefaultCallsPerServer     = 4096
	DefaultMaxFrameMemory     = 256 << 20
)

const (
	defaultHandshakeTimeout  = 10 * time.Second
	defaultKeepaliveInterval = 30 * time.Second
	defaultIdleTimeout       = 5 * time.Minute
	defaultWriteTimeout      = 20 * time.Second
	defaultStreamStall       = 30 * time.Second
)

// resolved are Options with every default applied and validated.
type resolved struct {
	Options
	limits protocol.Limits
	gate   conngate.Limits
}

func (o Options) resolve() (resolved, error) {
	r := resolved{Options: o}
	if o.Limits != nil {
		r.limits = *o.Limits
	} else {
		r.limits = protocol.DefaultLimits()
	}
	if err := r.limits.Validate(); err != nil {
		return r, fmt.Errorf("server: Options.Limits: %w", err)
	}
	var err error
	if _, err = resolveCompression(o.Compression, o.Limits); err != nil { // New resolves it for its methods
		return r, err
	}
	r.limits.MaxDecodedSize = math.MaxUint32
	if err := o.Governor.Validate(); err != nil {
		return r, fmt.Errorf("server: Options.Governor: %w", err)
	}
	if r.gate, err = o.Connections.gateLimits(); err != nil {
		return r, err
	}
	if err := o.Calls.validate(); err != nil {
		return r, err
	}
	if r.HandshakeTimeout == 0 {
		r.HandshakeTimeout = defaultHandshakeTimeout
	}
	if r.HandshakeTimeout < 0 {
		return r, fmt.Errorf("server: Options.HandshakeTimeout must not be negative (0 = %v), got %v", defaultHandshakeTimeout, o.HandshakeTimeout)
	}
	if r.KeepaliveInterval == 0 {
		r.KeepaliveInterval = defaultKeepaliveInterval
	}
	if r.IdleTimeout == 0 {
		r.IdleTimeout = defaultIdleTimeout
	}
	if r.WriteBufferSize < 0 {
		return r, errors.New("server: Options.WriteBufferSize must not be negative")
	}
	if r.WriteTimeout == 0 {
		r.WriteTimeout = defaultWriteTimeout
	}
	if r.StreamStallTimeout == 0 {
		r.StreamStallTimeout = defaultStreamStall
	}
	if r.StreamWindow, err = resolveStreamWindow(o.StreamWindow); err != nil {
		return r, err
	}
	if r.MaxFrameMemory == 0 {
		r.MaxFrameMemory = DefaultMaxFrameMemory
	}
	if r.MaxFrameMemory < int64(r.limits.MaxFrameSize) {
		return r, fmt.Errorf("server: Options.MaxFrameMemory (%d) must be at least the maximum frame size (%d)", r.MaxFrameMemory, r.limits.MaxFrameSize)
	}
	r.Calls = r.Calls.withDefaults()
	if r.Logger == nil {
		r.Logger = slog.New(slog.DiscardHandler)
	}
	return r, nil
}

func (l ConnectionLimits) gateLimits() (conngate.Limits, error) {
	g := conngate.DefaultLimits()
	if l.MaxConnections != 0 {
		g.MaxConnections = l.MaxConnections
		if l.MaxHandshakes == 0 && g.MaxHandshakes > g.MaxConnections {
			g.MaxHandshakes = g.MaxConnections
		}
	}
	if l.MaxHandshakes != 0 {
		g.MaxHandshakes = l.MaxHandshakes
	}
	if l.MaxHandshakesPerAddress != 0 {
		g.MaxHandshakesPerAddress = l.MaxHandshakesPerAddress
	} else if g.MaxHandshakes > 0 && g.MaxHandshakesPerAddress > g.MaxHandshakes {
		g.MaxHandshakesPerAddress = g.MaxHandshakes
	}
	if err := g.Validate(); err != nil {
		return g, fmt.Errorf("server: connection limits: %w", err)
	}
	return g, nil
}

func (c CallCapacity) validate() error {
	for _, f := range []struct {
		name string
		v    int
	}{{"PerConnection", c.PerConnection}, {"PerServer", c.PerServer}} {
		if f.v < 0 || f.v > governor.MaxCallCapacity {
			return fmt.Errorf("server: CallCapacity.%s must be in [0, %d], got %d", f.name, governor.MaxCallCapacity, f.v)
		}
	}
	return nil
}

// withDefaults fills zero fields with the defaults.
func (c CallCapacity) withDefaults() CallCapacity {
	if c.PerConnection == 0 {
		c.PerConnection = DefaultCallsPerConnection
	}
	if c.PerServer == 0 {
		c.PerServer = DefaultCallsPerServer
	}
	return c
}

// resolveCompression validates the compression configuration: Declared
// lengths are the governor's to judge, on the call; a MaxDecodedSize given
// in limits bounds them too.
func resolveCompression(c codecs.Config, limits *protocol.Limits) (*codecs.Resolved, error) {
	if limits != nil {
		if most := int(limits.MaxDecodedSize); c.MaxDecodedSize == 0 && most < codecs.DefaultMaxDecodedSize || c.MaxDecodedSize > most {
			c.MaxDecodedSize = most
		}
	}
	r, err := c.Resolve()
	if err != nil {
		return nil, fmt.Errorf("server: Options.Compression: %w", err)
	}
	return r, nil
}

// resolveStreamWindow validates a stream window (0 selects the default).
func resolveStreamWindow(n int) (int, error) {
	if n == 0 {
		return protocol.DefaultStreamWindow, nil
	}
	if n < protocol.InitialStreamWindow || n > protocol.MaxWindow {
		return 0, fmt.Errorf("server: Options.StreamWindow must be in [%d, %d] (0 = %d), got %d", protocol.InitialStreamWindow, protocol.MaxWindow, protocol.DefaultStreamWindow, n)
	}
	return n, nil
}
