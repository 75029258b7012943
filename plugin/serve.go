package plugin

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/sluicerpc/sluice/conformance/capabilities"
	"github.com/sluicerpc/sluice/spi"
)

// hostCheckInterval is how often a plugin checks that its host is alive.
const hostCheckInterval = 250 * time.Millisecond

// NewPluginLogger returns a logger for code running in a plugin binary. It
// writes JSON lines to stderr, which go-plugin forwards to the host's
// logger. A plugin must never write to stdout: go-plugin reads its
// handshake there.
func NewPluginLogger(name string) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{
		Name:       name,
		Output:     os.Stderr,
		Level:      hclog.Info,
		JSONFormat: true,
	})
}

// LimiterKindEntry is one limiter kind a plugin binary serves.
type LimiterKindEntry struct {
	// Kind is the implementation. Its Name is the name hosts register
	// it under; names must be unique within a binary.
	Kind spi.LimiterKind

	// Capabilities, when not nil, declares how the conformance suite
	// parameterizes Kind (see the conformance/capabilities package), so
	// that "sluice conformance --plugin" can test the binary without a
	// harness of its own. Its Class must be Kind's.
	Capabilities *capabilities.Limiter
}

// EndpointPolicyEntry is one endpoint policy a plugin binary serves.
type EndpointPolicyEntry struct {
	// Name is the name hosts ask for (Plugin.NewEndpointPolicy); names
	// must be unique within a binary.
	Name string

	// New returns a fresh policy instance that reads clock; the plugin
	// calls it once per Plugin.NewEndpointPolicy of a host. clock reads
	// the host's clock: every call from the host carries its reading, and
	// clock returns the latest one received (never going back), so a
	// time-dependent policy runs on the host's time, and the conformance
	// suite's fake clock reaches it. The instance lives in the plugin
	// until the host closes its EndpointPolicyClient; if it implements
	// io.Closer it is closed then.
	New func(clock spi.Clock) spi.EndpointPolicy

	// Capabilities, when not nil, declares what the conformance suite may
	// expect from the policy (see the conformance/capabilities package),
	// so that a host can run the suite against the binary.
	Capabilities *capabilities.EndpointPolicy
}

// CodecEntry is one codec a plugin binary serves.
type CodecEntry struct {
	// Codec is the implementation. Its Name is the wire profile name
	// hosts ask for (Plugin.Codec); it must be a valid name
	// (spi.ValidCodecName) and unique within a binary.
	Codec spi.Codec

	// Bomb, when not nil, builds one complete compressed body in Codec's
	// format that decodes to exactly decoded zero bytes, without holding
	// the decoded bytes (a streaming encoder over a zero reader), so that
	// the conformance suite can test Codec's bounds through the bridge
	// (CodecClient.Bomb). nil: the plugin builds no bombs for Codec.
	Bomb func(decoded int64) ([]byte, error)
}

// ServeConfig is what a plugin binary serves: limiter kinds, endpoint
// policies, codecs, or any mix of them, at least one thing. The bridge is built to grow:
// each SPI is a field, served as its own go-plugin plugin (its own gRPC
// service) over the same connection.
type ServeConfig struct {
	// LimiterKinds are the limiter kinds served.
	LimiterKinds []LimiterKindEntry

	// EndpointPolicies are the endpoint policies served.
	EndpointPolicies []EndpointPolicyEntry

	// Codecs are the codecs served.
	Codecs []CodecEntry

	// Logger receives the plugin's own logs (among them the panics of an
	// endpoint policy's Report, which are recovered in the plugin); the
	// default is NewPluginLogger("sluice-plugin"). It must not write to
	// stdout.
	Logger hclog.Logger
}

// Validate reports what makes c unservable: nothing to serve; for limiter
// kinds a nil kind, an empty or repeated name, an unknown class, or
// capabilities that are invalid or of another class than their kind; for
// endpoint policies an empty or repeated name, a nil New, or invalid
// capabilities; for codecs a nil codec, or an invalid or repeated name.
func (c ServeConfig) Validate() error {
	if len(c.LimiterKinds) == 0 && len(c.EndpointPolicies) == 0 && len(c.Codecs) == 0 {
		return errors.New("sluice/plugin: ServeConfig has no limiter kind and no endpoint policy, and no codec")
	}
	seen := make(map[string]bool, len(c.LimiterKinds))
	for i, e := range c.LimiterKinds {
		if e.Kind == nil {
			return fmt.Errorf("sluice/plugin: LimiterKinds[%d].Kind is nil", i)
		}
		name := e.Kind.Name()
		switch {
		case name == "":
			return fmt.Errorf("sluice/plugin: LimiterKinds[%d] has an empty name", i)
		case seen[name]:
			return fmt.Errorf("sluice/plugin: limiter kind %q is served twice", name)
		case e.Kind.Class() != spi.ClassConcurrency && e.Kind.Class() != spi.ClassRate:
			return fmt.Errorf("sluice/plugin: limiter kind %q has unknown class %v", name, e.Kind.Class())
		}
		seen[name] = true
		if e.Capabilities == nil {
			continue
		}
		if err := e.Capabilities.Validate(); err != nil {
			return fmt.Errorf("sluice/plugin: limiter kind %q: %w", name, err)
		}
		if e.Capabilities.Class != e.Kind.Class() {
			return fmt.Errorf("sluice/plugin: limiter kind %q: capabilities of class %v, kind of class %v",
				name, e.Capabilities.Class, e.Kind.Class())
		}
	}
	policies := make(map[string]bool, len(c.EndpointPolicies))
	for i, e := range c.EndpointPolicies {
		switch {
		case e.Name == "":
			return fmt.Errorf("sluice/plugin: EndpointPolicies[%d] has an empty name", i)
		case policies[e.Name]:
			return fmt.Errorf("sluice/plugin: endpoint policy %q is served twice", e.Name)
		case e.New == nil:
			return fmt.Errorf("sluice/plugin: endpoint policy %q: New is nil", e.Name)
		}
		policies[e.Name] = true
		if e.Capabilities != nil {
			if err := e.Capabilities.Validate(); err != nil {
				return fmt.Errorf("sluice/plugin: endpoint policy %q: %w", e.Name, err)
			}
		}
	}
	codecs := make(map[string]bool, len(c.Codecs))
	for i, e := range c.Codecs {
		if e.Codec == nil {
			return fmt.Errorf("sluice/plugin: Codecs[%d].Codec is nil", i)
		}
		name := e.Codec.Name()
		switch {
		case !spi.ValidCodecName(name):
			return fmt.Errorf("sluice/plugin: Codecs[%d] has an invalid name %q (1 to 64 of a-z, 0-9, '-', '_', '.')", i, name)
		case codecs[name]:
			return fmt.Errorf("sluice/plugin: codec %q is served twice", name)
		}
		codecs[name] = true
	}
	return nil
}

// Serve serves c over go-plugin's gRPC protocol. Call it from a plugin
// binary's main; it returns only when the host asks the plugin to stop. If
// c is invalid, Serve logs why and exits the process with status 1 (the
// host then reports that the plugin exited before the handshake).
//
// Every limiter the host creates lives in this process; every call carries
// the host's now, so the limiter sees exactly the host's instants (to the
// nanosecond; the monotonic reading and location do not cross).
//
// Endpoint policies live in this process too, one instance per host
// NewEndpointPolicy, addressed by id; tokens and outcomes cross unchanged.
//
// The plugin exits by itself when its host dies (checked every 250ms), so a
// crashed host does not leave it running. If an implementation panics in a
// call, the panic is reported to the host, which re-raises it in the
// caller, and the plugin keeps serving; the exception is an endpoint
// policy's Report, which must not panic: its panic is recovered and logged
// here, and the host's Report returns normally.
//
// Codecs are served statelessly: every call names the codec and carries
// its body (at most MaxCodecBody each way). A codec's Decompress runs
// under a context that ends when the host's context ends (its deadline and
// cancellation cross), when the host gives up on the call, or when the
// host goes away.
//
// Nothing may be written to stdout before Serve runs: it would break the
// handshake. Log to stderr, e.g. with NewPluginLogger.
func Serve(c ServeConfig) {
	logger := c.Logger
	if logger == nil {
		logger = NewPluginLogger("sluice-plugin")
	}
	if err := c.Validate(); err != nil {
		logger.Error("cannot serve", "error", err)
		os.Exit(1)
	}
	go watchHost(logger)
	goplugin.Serve(&goplugin.ServeConfig{
		HandshakeConfig: Handshake,
		Plugins:         servedPluginSet(c, logger),
		GRPCServer:      newGRPCServer,
		Logger:          logger,
	})
}

// newGRPCServer is go-plugin's default server accepting messages that
// carry a codec body of MaxCodecBody (gRPC's default is 4 MiB).
func newGRPCServer(opts []grpc.ServerOption) *grpc.Server {
	return goplugin.DefaultGRPCServer(append(opts, grpc.MaxRecvMsgSize(codecServerMaxMessage)))
}

// ServeLimiterKind serves kind alone, without declared capabilities: it is
// Serve with one entry and a logger named after the kind.
func ServeLimiterKind(kind spi.LimiterKind) {
	c := ServeConfig{LimiterKinds: []LimiterKindEntry{{Kind: kind}}}
	if kind != nil {
		c.Logger = NewPluginLogger("sluice-plugin." + kind.Name())
	}
	Serve(c)
}

// watchHost exits the process when the host that started it has died: the
// plugin then has another parent.
func watchHost(logger hclog.Logger) {
	host := os.Getppid()
	if s := os.Getenv(hostPIDEnv); s != "" {
		if pid, err := strconv.Atoi(s); err == nil {
			host = pid
		}
	}
	t := time.NewTicker(hostCheckInterval)
	defer t.Stop()
	for range t.C {
		if os.Getppid() != host {
			logger.Error("host process is gone; exiting", "host_pid", host)
			os.Exit(2)
		}
	}
}
