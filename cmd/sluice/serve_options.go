package main

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"time"

	"github.com/sluicerpc/sluice/kernel/governor"
	"github.com/sluicerpc/sluice/limiters/concurrency"
	"github.com/sluicerpc/sluice/limiters/tokenbucket"
	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/server"
)

// serveOptions are the flags of "sluice serve".
type serveOptions struct {
	Addr                         string
	CertFile, KeyFile, ClientCAs string
	MaxConns, MaxHandshakes      int
	MaxHandshakesPerAddress      int
	CallsPerConn, CallsPerServer int
	Concurrency                  int64
	Rate                         int64
	QueueCalls                   int
	QueueDelay                   time.Duration
	StopTimeout                  time.Duration
	HandshakeTimeout             time.Duration
	Keepalive                    time.Duration // 0: off
	IdleTimeout                  time.Duration // 0: never
	MaxFrameSize                 int64
	MaxFrameMemory               int64
	WriteTimeout                 time.Duration // 0: off
	StreamStallTimeout           time.Duration // 0: off
	Compression                  compressionFlags
	MaxDecodes                   int64
	MaxRetainedBytes             int64
	MaxDecodedBytes              int64
	Control                      controlFlags

	// set names the flags given on the command line: a flag whose value
	// only matters with another one is an error alone, and
	// -max-handshakes defaults to a bound that depends on -max-conns.
	set map[string]bool
}

// The defaults of "sluice serve", which are also server.Options' defaults
// (the command passes every value explicitly).
const (
	defaultMaxConns         = 1024
	defaultMaxHandshakes    = 64
	defaultHandshakeTimeout = 10 * time.Second
	defaultKeepalive        = 30 * time.Second
	defaultIdleTimeout      = 5 * time.Minute
	defaultWriteTimeout     = 20 * time.Second
	defaultStreamStall      = 30 * time.Second
	defaultPerAddress       = 8
	defaultStopTimeout      = 10 * time.Second
	defaultQueueDelay       = 100 * time.Millisecond
	// maxConnBound is the largest connection or handshake bound the
	// server accepts.
	maxConnBound = math.MaxInt32
)

// serveFlags defines the flags of "sluice serve" on fs, into o.
func serveFlags(fs *flag.FlagSet, o *serveOptions) {
	fs.StringVar(&o.Addr, "addr", "127.0.0.1:7878", "address to listen on")
	fs.StringVar(&o.CertFile, "tls-cert", "", "TLS certificate file (PEM); with -tls-key, the server speaks TLS")
	fs.StringVar(&o.KeyFile, "tls-key", "", "TLS private key file (PEM)")
	fs.StringVar(&o.ClientCAs, "client-ca", "", "CA file (PEM) to verify client certificates with; requires them")
	fs.IntVar(&o.MaxConns, "max-conns", defaultMaxConns, "live connections, at least 1")
	fs.IntVar(&o.MaxHandshakes, "max-handshakes", 0, fmt.Sprintf("connections still in TLS, protocol handshake or authentication, 1 to -max-conns (default %d, or -max-conns if that is lower)", defaultMaxHandshakes))
	fs.IntVar(&o.MaxHandshakesPerAddress, "max-handshakes-per-address", 0, fmt.Sprintf("connections from one source address still in handshake, 1 to -max-handshakes (default %d, or -max-handshakes if that is lower)", defaultPerAddress))
	fs.DurationVar(&o.HandshakeTimeout, "handshake-timeout", defaultHandshakeTimeout, "how long a connection may take for TLS, the protocol handshake and authentication; positive")
	fs.DurationVar(&o.Keepalive, "keepalive", defaultKeepalive, "ping a connection silent for this long, close it when silent for as long again; 0 turns keepalive off")
	fs.DurationVar(&o.IdleTimeout, "idle-timeout", defaultIdleTimeout, "close (with a GoAway) a connection with no call in flight and no request for this long; 0 never closes idle connections")
	fs.Int64Var(&o.MaxFrameSize, "max-frame-size", int64(protocol.DefaultLimits().MaxFrameSize), fmt.Sprintf("largest frame payload accepted, in bytes (%d to %d)", protocol.MinFrameSize, uint64(math.MaxUint32)))
	fs.Int64Var(&o.MaxFrameMemory, "max-frame-memory", server.DefaultMaxFrameMemory, "bytes held over all connections for request frames larger than 4 KiB, while they arrive and until their call ends; at least -max-frame-size (default 256 MiB, or -max-frame-size if that is larger)")
	fs.DurationVar(&o.WriteTimeout, "write-timeout", defaultWriteTimeout, "close a connection whose writes make no progress for this long (a client that stopped reading); 0 turns it off")
	fs.DurationVar(&o.StreamStallTimeout, "stream-stall-timeout", defaultStreamStall, "end a stream whose Send waited this long for the client's window (a client that never returns credit); 0 turns it off")
	fs.IntVar(&o.CallsPerConn, "calls-per-conn", server.DefaultCallsPerConnection, fmt.Sprintf("active plus reserved calls per connection, one-way calls included, 1 to %d", governor.MaxCallCapacity))
	fs.IntVar(&o.CallsPerServer, "calls-per-server", server.DefaultCallsPerServer, fmt.Sprintf("active plus reserved calls per server, one-way calls included, 1 to %d", governor.MaxCallCapacity))
	fs.Int64Var(&o.Concurrency, "concurrency", 0, fmt.Sprintf("admission: global concurrency limit, 0 to %d (0: none)", concurrency.MaxLimit))
	fs.Int64Var(&o.Rate, "rate", 0, fmt.Sprintf("admission: global token bucket, this many calls per second with a burst of as many, 0 to %d (0: none)", tokenbucket.MaxTokenLimit))
	fs.IntVar(&o.QueueCalls, "queue-calls", 0, fmt.Sprintf("admission: calls that may wait for capacity, 0 to %d (0: none wait); needs -concurrency or -rate", math.MaxInt32))
	fs.DurationVar(&o.QueueDelay, "queue-delay", defaultQueueDelay, "admission: how long a call may wait; positive; needs -queue-calls")
	o.Compression.define(fs, "responses")
	def := governor.DefaultLimits()
	fs.Int64Var(&o.MaxDecodes, "max-decodes", def.Decodes, "governor: decompressions running at once, server-wide; later ones wait their turn; positive")
	fs.Int64Var(&o.MaxRetainedBytes, "max-retained-bytes", def.RetainedBytes, "governor: compressed request bytes held by calls not yet decoded, server-wide; positive")
	fs.Int64Var(&o.MaxDecodedBytes, "max-decoded-bytes", def.DecodedBytes, "governor: decoded request bytes in flight, server-wide (each request counts its declared length); positive")
	o.Control.define(fs)
	fs.DurationVar(&o.StopTimeout, "stop-timeout", defaultStopTimeout, "on SIGINT or SIGTERM, how long calls in flight may take before the server closes; positive (a second signal closes at once; exit status 1 when the drain did not complete)")
}

// noteSet records which flags of fs the command line gave.
func (o *serveOptions) noteSet(fs *flag.FlagSet) {
	o.set = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { o.set[f.Name] = true })
}

// validate checks every flag and names the flag of each problem; a value
// is never replaced by a default behind the user's back.
func (o serveOptions) validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if o.Addr == "" {
		bad("-addr must not be empty")
	}
	if err := inRange("-max-conns", int64(o.MaxConns), 1, maxConnBound, ""); err != nil {
		errs = append(errs, err)
	}
	if o.set["max-handshakes"] {
		switch {
		case o.MaxHandshakes < 1:
			bad("-max-handshakes must be positive, got %d", o.MaxHandshakes)
		case o.MaxHandshakes > o.MaxConns && o.MaxConns >= 1:
			bad("-max-handshakes (%d) must not exceed -max-conns (%d)", o.MaxHandshakes, o.MaxConns)
		}
	}
	if o.set["max-handshakes-per-address"] {
		handshakes := defaultMaxHandshakes
		if o.set["max-handshakes"] {
			handshakes = o.MaxHandshakes
		} else if o.MaxConns >= 1 {
			handshakes = min(handshakes, o.MaxConns)
		}
		switch {
		case o.MaxHandshakesPerAddress < 1:
			bad("-max-handshakes-per-address must be positive, got %d", o.MaxHandshakesPerAddress)
		case o.MaxHandshakesPerAddress > handshakes && handshakes >= 1:
			bad("-max-handshakes-per-address (%d) must not exceed -max-handshakes (%d)", o.MaxHandshakesPerAddress, handshakes)
		}
	}
	positive := []struct {
		name string
		v    time.Duration
	}{{"-handshake-timeout", o.HandshakeTimeout}, {"-queue-delay", o.QueueDelay}, {"-stop-timeout", o.StopTimeout}}
	for _, d := range positive {
		if d.v <= 0 {
			bad("%s must be positive, got %v", d.name, d.v)
		}
	}
	if o.Keepalive < 0 {
		bad("-keepalive must not be negative (0 turns keepalive off), got %v", o.Keepalive)
	}
	if o.WriteTimeout < 0 {
		bad("-write-timeout must not be negative (0 turns it off), got %v", o.WriteTimeout)
	}
	if o.StreamStallTimeout < 0 {
		bad("-stream-stall-timeout must not be negative (0 turns it off), got %v", o.StreamStallTimeout)
	}
	if o.IdleTimeout < 0 {
		bad("-idle-timeout must not be negative (0 never closes idle connections), got %v", o.IdleTimeout)
	}
	if o.MaxFrameSize < protocol.MinFrameSize || o.MaxFrameSize > math.MaxUint32 {
		bad("-max-frame-size must be between %d and %d (bytes), got %d", protocol.MinFrameSize, uint64(math.MaxUint32), o.MaxFrameSize)
	} else if o.set["max-frame-memory"] && o.MaxFrameMemory < o.MaxFrameSize {
		bad("-max-frame-memory (%d) must be at least -max-frame-size (%d)", o.MaxFrameMemory, o.MaxFrameSize)
	}
	ranges := []struct {
		name    string
		v, most int64
		zero    string
	}{
		{"-concurrency", o.Concurrency, concurrency.MaxLimit, "no limit"},
		{"-rate", o.Rate, tokenbucket.MaxTokenLimit, "no limit"},
		{"-queue-calls", int64(o.QueueCalls), math.MaxInt32, "none wait"},
	}
	for _, r := range ranges {
		if err := inRange(r.name, r.v, 0, r.most, r.zero); err != nil {
			errs = append(errs, err)
		}
	}
	for _, r := range []struct {
		name string
		v    int
	}{{"-calls-per-conn", o.CallsPerConn}, {"-calls-per-server", o.CallsPerServer}} {
		if err := inRange(r.name, int64(r.v), 1, governor.MaxCallCapacity, ""); err != nil {
			errs = append(errs, err)
		}
	}
	if o.QueueCalls > 0 && o.Concurrency <= 0 && o.Rate <= 0 {
		bad("-queue-calls needs -concurrency or -rate")
	}
	if o.set["queue-delay"] && o.QueueCalls <= 0 {
		bad("-queue-delay needs -queue-calls")
	}
	errs = append(errs, o.Compression.validate()...)
	for _, g := range []struct {
		name string
		v    int64
	}{{"-max-decodes", o.MaxDecodes}, {"-max-retained-bytes", o.MaxRetainedBytes}, {"-max-decoded-bytes", o.MaxDecodedBytes}} {
		if err := inRange(g.name, g.v, 1, math.MaxInt64, ""); err != nil {
			errs = append(errs, err)
		}
	}
	if (o.CertFile == "") != (o.KeyFile == "") {
		bad("-tls-cert and -tls-key go together")
	}
	if o.ClientCAs != "" && o.CertFile == "" {
		bad("-client-ca needs -tls-cert and -tls-key")
	}
	errs = append(errs, o.validateControl()...)
	return errors.Join(errs...)
}

// documentFlags are the flags whose settings a configuration document
// holds: with -config or -etcd-key the document is their only source.
var documentFlags = []string{"concurrency", "rate", "queue-calls", "queue-delay", "max-conns", "max-handshakes",
	"max-handshakes-per-address", "calls-per-conn", "calls-per-server", "max-decodes", "max-retained-bytes",
	"max-decoded-bytes", "codecs", "compress-min-size", "max-decoded-size", "decode-ratio", "decode-floor"}

// validateControl checks the flags of the configuration sources.
func (o serveOptions) validateControl() []error {
	var errs []error
	cf := o.Control
	if cf.ConfigFile != "" || cf.EtcdKey != "" {
		src := "-config"
		if cf.ConfigFile == "" {
			src = "-etcd-key"
		}
		for _, f := range documentFlags {
			if o.set[f] {
				errs = append(errs, fmt.Errorf("-%s: with %s the configuration document sets it (docs/operations.md)", f, src))
			}
		}
	}
	if (cf.EtcdKey == "") != (cf.EtcdEndpoints == "") {
		errs = append(errs, errors.New("-etcd-endpoints and -etcd-key go together"))
	}
	if cf.EtcdTimeout <= 0 {
		errs = append(errs, fmt.Errorf("-etcd-timeout must be positive, got %v", cf.EtcdTimeout))
	}
	if (cf.AdminAddr == "") != (cf.AdminTokenFile == "") {
		errs = append(errs, errors.New("-admin and -admin-token-file go together (the admin API requires a bearer token)"))
	}
	return errs
}

// inRange checks that flag's value v is in [least, most]; zero, when
// least is 0, says what 0 means.
func inRange(flag string, v, least, most int64, zero string) error {
	switch {
	case v < least && least == 1:
		return fmt.Errorf("%s must be positive, got %d", flag, v)
	case v < least:
		return fmt.Errorf("%s must not be negative (0: %s), got %d", flag, zero, v)
	case v > most:
		return fmt.Errorf("%s must be at most %d, got %d", flag, most, v)
	}
	return nil
}

// serverOptions maps the validated flags onto server.Options, without TLS
// and admission (see build). Every field is explicit except
// Connections.MaxHandshakes without -max-handshakes and
// MaxHandshakesPerAddress without -max-handshakes-per-address: 0 asks the
// server for its default bound, at most the bound containing it.
func (o serveOptions) serverOptions() server.Options {
	lim := protocol.DefaultLimits()
	lim.MaxFrameSize = uint32(o.MaxFrameSize)
	if o.Compression.MaxDecodedSize > 0 {
		lim.MaxDecodedSize = uint32(o.Compression.MaxDecodedSize) // the server takes the smaller of the two
	}
	so := server.Options{
		Connections:        server.ConnectionLimits{MaxConnections: o.MaxConns},
		Calls:              server.CallCapacity{PerConnection: o.CallsPerConn, PerServer: o.CallsPerServer},
		Limits:             &lim,
		HandshakeTimeout:   o.HandshakeTimeout,
		KeepaliveInterval:  offIfZero(o.Keepalive),
		IdleTimeout:        offIfZero(o.IdleTimeout),
		WriteTimeout:       offIfZero(o.WriteTimeout),
		StreamStallTimeout: offIfZero(o.StreamStallTimeout),
		MaxFrameMemory:     o.frameMemory(),
		Compression:        o.Compression.config(),
		Governor:           governor.Limits{Decodes: o.MaxDecodes, RetainedBytes: o.MaxRetainedBytes, DecodedBytes: o.MaxDecodedBytes},
	}
	if o.set["max-handshakes"] {
		so.Connections.MaxHandshakes = o.MaxHandshakes
	}
	if o.set["max-handshakes-per-address"] {
		so.Connections.MaxHandshakesPerAddress = o.MaxHandshakesPerAddress
	}
	return so
}

// frameMemory is -max-frame-memory, or without it the default raised to
// -max-frame-size when that is larger.
func (o serveOptions) frameMemory() int64 {
	if o.set["max-frame-memory"] {
		return o.MaxFrameMemory
	}
	return max(o.MaxFrameMemory, o.MaxFrameSize)
}

// offIfZero maps the command line's "0: off" onto server.Options'
// "negative: off" (where 0 selects the default).
func offIfZero(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

// describeOff prints a duration flag whose 0 means off.
func describeOff(d time.Duration) string {
	if d == 0 {
		return "off"
	}
	return d.String()
}
