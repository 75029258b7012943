package client

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"net"
	"time"

	"go.opentelemetry.io/otel/metric"

	"github.com/sluicerpc/sluice/codecs"
	"github.com/sluicerpc/sluice/protocol"
)

// Options configure a Client. The zero value of each field selects its
// default.
type Options struct {
	// TLS, when not nil, makes every connection speak TLS with this
	// configuration (set Certificates for a client certificate). When
	// ServerName is empty, the endpoint's host name is used. nil means
	// plaintext.
	TLS *tls.Config

	// Auth is the opaque authentication payload sent in every Handshake
	// (a token, for instance) for the server's authenticator.
	Auth []byte

	// DialTimeout bounds one connection attempt: TCP connect, the TLS
	// handshake and the protocol handshake (default 10s).
	DialTimeout time.Duration

	// Dialer, when not nil, opens each connection to an endpoint instead
	// of a TCP dial to its address: a proxy, a unix socket, or an
	// in-memory connection in tests (servertest.Network). ctx bounds the
	// dial (DialTimeout, Close); TLS, when configured, and the protocol
	// handshake run over the connection it returns.
	Dialer func(ctx context.Context, address string) (net.Conn, error)

	// Backoff spaces the connection attempts to an endpoint whose dials
	// fail.
	Backoff Backoff

	// MaxFrameSize is the largest frame payload the client accepts,
	// announced to the server in the handshake (default 4 MiB, at least
	// protocol.MinFrameSize). A larger frame is a protocol violation that
	// closes the connection.
	MaxFrameSize uint32

	// Logger receives connection-level events; nil discards them.
	Logger *slog.Logger

	// KeepaliveInterval, when positive, makes the client send a Ping on a
	// connection that received nothing for this long, and close it when
	// nothing arrives for another interval. The server's Pings are always
	// answered, whatever this value.
	KeepaliveInterval time.Duration

	// IdempotentMethods lists the methods ("service/method") that may be
	// retried after the connection was lost or the server answered
	// Unavailable, since running them twice is harmless.
	IdempotentMethods []string

	// MaxAttempts bounds the attempts of one call, first attempt included
	// (default 3); the MaxAttempts call option overrides it.
	MaxAttempts int

	// MaxRetryWait is the longest server retry hint (a refusal's
	// RetryAfter) a call waits before it tries again (default
	// DefaultMaxRetryWait, 30s; negative: never wait a hint). A hint above
	// it is not waited: the call fails at once with the server's refusal,
	// whatever its deadline, and the client logs it (Warn, at the 1st,
	// 2nd, 4th, 8th ... such hint). A hint is also waited only when the
	// call's deadline leaves room for an attempt after it.
	MaxRetryWait time.Duration

	// WriteBufferSize bounds the frames pending on a connection before a
	// caller blocks (protocol.DefaultWriteBufferSize by default).
	WriteBufferSize int

	// StreamWindow is the receive window of each stream (docs/streaming.md):
	// the client grows the stream's window from
	// protocol.InitialStreamWindow (64 KiB) to it with a WindowUpdate as
	// soon as its Request is queued (default protocol.DefaultStreamWindow,
	// 256 KiB; at least InitialStreamWindow, at most protocol.MaxWindow).
	// A caller that reads slowly holds less than this plus one message;
	// the connection's window (1 MiB) bounds all the streams of a
	// connection together.
	StreamWindow int

	// WriteTimeout closes a connection whose writes make no progress for
	// this long (a server that stopped reading): its calls fail with
	// Unavailable, those without a deadline included, instead of waiting
	// for buffer space forever (default 20s; negative disables). A call
	// with a deadline or a cancelled context never waits past it for a
	// connection that does not drain.
	WriteTimeout time.Duration

	// Compression configures compressed bodies, both ways (see
	// Compression in the package documentation). The zero value offers
	// codecs.Builtin() in the handshake, compresses requests per
	// codecs.DefaultPolicy (at least 1 KiB, saving at least 64 bytes and
	// 5%), and decodes compressed responses of at most
	// codecs.DefaultMaxDecodedSize bytes, and of at most
	// max(DecodeFloor, 128 x their compressed size) bytes. Codecs are
	// offered in their order, and a connection compresses its requests
	// with the first of them its server accepts. Methods overrides Policy
	// per method ("service/method"); the Compression and NoCompression
	// call options override both for one call. Off offers nothing:
	// requests go uncompressed and a compressed response fails its call.
	// The configuration is resolved by Dial, which reports every invalid
	// field; the codecs must be safe for concurrent use (spi.Codec).
	Compression codecs.Config

	// MaxDecodedBytes bounds the bytes all of the client's decodes of
	// compressed responses and stream messages hold at once: each takes
	// its declared length from it while its codec runs, and one that does
	// not fit waits, in arrival order, until others finish or its context
	// ends (then it fails with DeadlineExceeded or Canceled, naming the
	// budget). Default DefaultMaxDecodedBytes (128 MiB); negative: no
	// bound. It must be at least Compression's MaxDecodedSize (64 MiB by
	// default), so that every response the client accepts can decode.
	MaxDecodedBytes int64

	// MeterProvider, when not nil, receives the client's metrics
	// (docs/observability.md): rpc.client.call.duration and the request
	// and response sizes per unary call (only the duration per stream),
	// by method and status code, per the OpenTelemetry RPC semantic
	// conventions (SemconvVersion), and sluice's own (sluice.client.*):
	// attempts per call, endpoint policy decisions and circuit states,
	// dials and connections per endpoint. The instruments are created in
	// Dial and the observations unregistered by Close. nil means no
	// metrics: a call pays one nil check.
	MeterProvider metric.MeterProvider
}

// DefaultMaxRetryWait is Options.MaxRetryWait's default: the longest
// server retry hint a call waits.
const DefaultMaxRetryWait = 30 * time.Second

// Backoff is an exponential backoff with jitter: the n-th consecutive
// failure waits Initial*2^(n-1), capped at Max, then scaled by a random
// factor in [1-Jitter, 1+Jitter].
type Backoff struct {
	Initial time.Duration // default 50ms
	Max     time.Duration // default 5s
	Jitter  float64       // 0..1, default 0.2
}

// delay returns the wait after the given number of consecutive failures.
func (b Backoff) delay(failures int) time.Duration {
	d := b.Initial
	for i := 1; i < failures && d < b.Max; i++ {
		d *= 2
	}
	d = min(d, b.Max)
	if b.Jitter > 0 {
		d = time.Duration(float64(d) * (1 - b.Jitter + 2*b.Jitter*rand.Float64()))
	}
	return d
}

// config is a resolved Options.
type config struct {
	Options
	idempotent map[string]struct{}
	comp       *codecs.Resolved // Options.Compression, resolved
	offer      []string         // comp.Names(): the profiles every handshake offers
}

func (o Options) resolve() (*config, error) {
	if o.DialTimeout == 0 {
		o.DialTimeout = 10 * time.Second
	}
	if o.DialTimeout < 0 {
		return nil, errors.New("sluice client: negative DialTimeout")
	}
	if o.WriteTimeout == 0 {
		o.WriteTimeout = 20 * time.Second
	}
	if o.Backoff.Initial == 0 {
		o.Backoff.Initial = 50 * time.Millisecond
	}
	if o.Backoff.Max == 0 {
		o.Backoff.Max = 5 * time.Second
	}
	if o.Backoff.Jitter == 0 {
		o.Backoff.Jitter = 0.2
	}
	if o.Backoff.Initial < 0 || o.Backoff.Max < o.Backoff.Initial || o.Backoff.Jitter < 0 || o.Backoff.Jitter > 1 {
		return nil, fmt.Errorf("sluice client: invalid Backoff %+v", o.Backoff)
	}
	if o.MaxFrameSize == 0 {
		o.MaxFrameSize = protocol.DefaultLimits().MaxFrameSize
	}
	if o.MaxFrameSize < protocol.MinFrameSize {
		return nil, fmt.Errorf("sluice client: MaxFrameSize %d is below %d", o.MaxFrameSize, protocol.MinFrameSize)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.KeepaliveInterval < 0 {
		o.KeepaliveInterval = 0
	}
	if o.MaxAttempts == 0 {
		o.MaxAttempts = 3
	}
	if o.MaxAttempts < 0 {
		return nil, errors.New("sluice client: negative MaxAttempts")
	}
	if o.MaxRetryWait == 0 {
		o.MaxRetryWait = DefaultMaxRetryWait
	}
	if o.StreamWindow == 0 {
		o.StreamWindow = protocol.DefaultStreamWindow
	}
	if o.StreamWindow < protocol.InitialStreamWindow || o.StreamWindow > protocol.MaxWindow {
		return nil, fmt.Errorf("sluice client: StreamWindow must be in [%d, %d] (0 = %d), got %d", protocol.InitialStreamWindow, protocol.MaxWindow, protocol.DefaultStreamWindow, o.StreamWindow)
	}
	comp, err := o.Compression.Resolve()
	if err != nil {
		return nil, fmt.Errorf("sluice client: Options.Compression: %w", err)
	}
	switch {
	case o.MaxDecodedBytes == 0:
		o.MaxDecodedBytes = max(DefaultMaxDecodedBytes, int64(comp.MaxDecodedSize()))
	case o.MaxDecodedBytes > 0 && o.MaxDecodedBytes < int64(comp.MaxDecodedSize()):
		return nil, fmt.Errorf("sluice client: MaxDecodedBytes (%d) is below Compression's MaxDecodedSize (%d): a response the client accepts could never decode", o.MaxDecodedBytes, comp.MaxDecodedSize())
	}
	c := &config{Options: o, idempotent: make(map[string]struct{}, len(o.IdempotentMethods)), comp: comp, offer: comp.Names()}
	for _, m := range o.IdempotentMethods {
		c.idempotent[m] = struct{}{}
	}
	return c, nil
}

// limits are the protocol limits the client enforces on what it receives.
func (c *config) limits() protocol.Limits {
	l := protocol.DefaultLimits()
	l.MaxFrameSize = c.MaxFrameSize
	// A declared original length is checked per call, against
	// Options.Compression's bounds (Resolved.CheckDeclared), so that a
	// response declaring too much fails its call instead of closing the
	// connection as a protocol violation.
	l.MaxDecodedSize = math.MaxUint32
	return l
}
