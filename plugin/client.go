package plugin

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	goplugin "github.com/hashicorp/go-plugin"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/sluicerpc/sluice/plugin/internal/pb"
	"github.com/sluicerpc/sluice/spi"
)

// ErrPluginUnavailable wraps every failure to reach a plugin: the process
// crashed or was killed, the client was closed, or a call timed out.
var ErrPluginUnavailable = errors.New("sluice/plugin: plugin unavailable")

// ErrPluginExited is joined to ErrPluginUnavailable when the plugin process
// is known to have exited.
var ErrPluginExited = errors.New("sluice/plugin: plugin process exited")

// Option configures Open and LoadLimiterKind.
type Option func(*options)

type options struct {
	logger       hclog.Logger
	startTimeout time.Duration
	callTimeout  time.Duration
	kind         string
	codec        string
	// manualWatch leaves the call watch without its watchdog: its clock
	// advances only when a test ticks it (export_test.go).
	manualWatch bool
}

func defaultOptions() options {
	return options{startTimeout: time.Minute, callTimeout: 30 * time.Second}
}

func (o *options) log() hclog.Logger {
	if o.logger == nil {
		o.logger = hclog.New(&hclog.LoggerOptions{Name: "sluice-plugin", Output: os.Stderr, Level: hclog.Info})
	}
	return o.logger
}

// WithLogger sets the host-side logger; the plugin's stderr is forwarded to
// it. The default logs at Info to stderr.
func WithLogger(l hclog.Logger) Option { return func(o *options) { o.logger = l } }

// WithStartTimeout bounds how long the plugin may take to complete the
// handshake (default one minute).
func WithStartTimeout(d time.Duration) Option { return func(o *options) { o.startTimeout = d } }

// WithCallTimeout bounds every call to the plugin (default 30s). A call
// that gets no answer within about d (at most 5d/4) fails like a call to a
// crashed plugin, and so does every other call in flight to the same
// plugin at that moment: a plugin that leaves a call unanswered that long
// is taken as hung. Later calls try again. The bound is kept by a watchdog
// rather than a deadline per call, which would cost a tenth of a local
// round trip.
func WithCallTimeout(d time.Duration) Option { return func(o *options) { o.callTimeout = d } }

// WithKind makes LoadLimiterKind return the kind named name, for a plugin
// that serves several. Open ignores it.
func WithKind(name string) Option { return func(o *options) { o.kind = name } }

// Plugin is a running plugin binary seen from the host: the limiter kinds,
// endpoint policies and codecs it serves, and its process. It is safe for
// concurrent use.
//
// Every limiter a host creates from one of its kinds lives in the plugin
// process, addressed by id, and every call crosses the process boundary
// (tens of microseconds), so plug-in kinds suit remote or coarse-grained
// limits.
type Plugin struct {
	rpc         pb.LimiterKindClient
	policyRPC   pb.EndpointPolicyClient
	codecRPC    pb.CodecClient
	logger      hclog.Logger
	callTimeout time.Duration
	watch       *callWatch
	kinds       []*LimiterKindClient
	policies    []*pb.PolicyInfo
	codecs      []*CodecClient

	proc   *goplugin.Client // nil when not started by Open
	closed atomic.Bool

	failures atomic.Uint64
	errMu    sync.Mutex
	lastErr  error
}

// newPlugin asks the plugin which kinds, endpoint policies and codecs it
// serves. A plugin built before the bridge carried endpoint policies (or
// codecs) answers that listing with Unimplemented: it serves none.
func newPlugin(ctx context.Context, rpc pb.LimiterKindClient, policyRPC pb.EndpointPolicyClient, codecRPC pb.CodecClient, o options) (*Plugin, error) {
	p := &Plugin{rpc: rpc, policyRPC: policyRPC, codecRPC: codecRPC, logger: o.log(), callTimeout: o.callTimeout}
	ctx, cancel := context.WithTimeout(ctx, p.callTimeout)
	defer cancel()
	list, err := rpc.Kinds(ctx, &pb.Empty{})
	if err != nil {
		return nil, fmt.Errorf("%w: listing the limiter kinds: %v", ErrPluginUnavailable, err)
	}
	for _, info := range list.GetKinds() {
		p.kinds = append(p.kinds, newLimiterKindClient(p, info))
	}
	policies, err := policyRPC.Policies(ctx, &pb.Empty{})
	switch {
	case status.Code(err) == codes.Unimplemented:
	case err != nil:
		return nil, fmt.Errorf("%w: listing the endpoint policies: %v", ErrPluginUnavailable, err)
	default:
		p.policies = policies.GetPolicies()
	}
	codecs, err := codecRPC.Codecs(ctx, &pb.Empty{})
	switch {
	case status.Code(err) == codes.Unimplemented:
	case err != nil:
		return nil, fmt.Errorf("%w: listing the codecs: %v", ErrPluginUnavailable, err)
	default:
		for _, info := range codecs.GetCodecs() {
			p.codecs = append(p.codecs, &CodecClient{p: p, name: info.GetName(), bomb: info.GetBomb()})
		}
	}
	if len(p.kinds) == 0 && len(p.policies) == 0 && len(p.codecs) == 0 {
		return nil, errors.New("sluice/plugin: the plugin serves no limiter kind and no endpoint policy, and no codec")
	}
	logger := p.logger
	onHang := func(calls int) {
		logger.Error("plugin calls timed out; failing every call in flight", "overdue", calls, "call_timeout", o.callTimeout)
	}
	if o.manualWatch {
		p.watch = newStoppedCallWatch(p.callTimeout, onHang)
	} else {
		p.watch = newCallWatch(p.callTimeout, onHang)
	}
	// A Plugin nobody closed stops its watchdog once unreachable.
	runtime.AddCleanup(p, func(w *callWatch) { w.stopWatch(errPluginClosed) }, p.watch)
	return p, nil
}

// Open starts the plugin binary at path and completes the handshake. The
// plugin may serve limiter kinds (LimiterKinds), endpoint policies
// (EndpointPolicies), codecs (Codecs) or any mix of them. Close
// kills the plugin; a plugin also exits by itself when the host process
// dies. Processes the plugin starts itself are not killed by Close.
func Open(path string, opts ...Option) (*Plugin, error) {
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	cmd := exec.Command(path)
	cmd.Env = append(os.Environ(), hostPIDEnv+"="+strconv.Itoa(os.Getpid()))
	tail := &stderrTail{}
	c := goplugin.NewClient(&goplugin.ClientConfig{
		Stderr:           tail,
		HandshakeConfig:  Handshake,
		Plugins:          hostPluginSet(o),
		Cmd:              cmd,
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		Logger:           o.log(),
		StartTimeout:     o.startTimeout,
	})
	rc, err := c.Client()
	if err != nil {
		c.Kill() // waits for the plugin's stderr to be read
		if s := tail.String(); s != "" {
			return nil, fmt.Errorf("sluice/plugin: start %s: %w\nthe plugin's last output on stderr:\n%s", path, err, s)
		}
		return nil, fmt.Errorf("sluice/plugin: start %s: %w", path, err)
	}
	raw, err := rc.Dispense(limiterKindsPluginName)
	if err != nil {
		c.Kill()
		return nil, fmt.Errorf("sluice/plugin: %s: %w", path, err)
	}
	p := raw.(*Plugin)
	p.proc = c
	return p, nil
}

// LoadLimiterKind opens the plugin binary at path and returns the kind it
// serves: the one named by WithKind, or the only one. Closing the returned
// kind closes the plugin.
func LoadLimiterKind(path string, opts ...Option) (*LimiterKindClient, error) {
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	p, err := Open(path, opts...)
	if err != nil {
		return nil, err
	}
	if o.kind != "" {
		k, err := p.LimiterKind(o.kind)
		if err != nil {
			_ = p.Close()
			return nil, err
		}
		return k, nil
	}
	if len(p.kinds) != 1 {
		names := p.names()
		_ = p.Close()
		return nil, fmt.Errorf("sluice/plugin: %s serves %d limiter kinds %q; choose one with WithKind", path, len(names), names)
	}
	return p.kinds[0], nil
}

// LimiterKinds returns the kinds the plugin serves, in the order it serves
// them.
func (p *Plugin) LimiterKinds() []*LimiterKindClient { return slices.Clone(p.kinds) }

// LimiterKind returns the served kind named name.
func (p *Plugin) LimiterKind(name string) (*LimiterKindClient, error) {
	for _, k := range p.kinds {
		if k.name == name {
			return k, nil
		}
	}
	return nil, fmt.Errorf("sluice/plugin: the plugin serves no limiter kind %q (it serves %q)", name, p.names())
}

func (p *Plugin) names() []string {
	names := make([]string, len(p.kinds))
	for i, k := range p.kinds {
		names[i] = k.name
	}
	return names
}

// Register registers every kind the plugin serves in reg. It stops at the
// first kind reg refuses (a name taken already) and returns that error;
// the kinds registered before it stay registered.
func (p *Plugin) Register(reg *spi.Registry) error {
	for _, k := range p.kinds {
		if err := reg.Register(k); err != nil {
			return err
		}
	}
	return nil
}

// Pid returns the plugin's process id, or 0 if p did not start a process.
func (p *Plugin) Pid() int {
	if p.proc == nil {
		return 0
	}
	if rc := p.proc.ReattachConfig(); rc != nil {
		return rc.Pid
	}
	return 0
}

// Exited reports whether the plugin process is known to have exited.
func (p *Plugin) Exited() bool { return p.proc != nil && p.proc.Exited() }

// Close kills the plugin process (if p started one) and fails the calls in
// flight. Limiters of its kinds, its endpoint policies and its codecs fail
// afterwards.
// Close is idempotent.
func (p *Plugin) Close() error {
	if p.closed.Swap(true) {
		return nil
	}
	p.watch.stopWatch(errPluginClosed)
	if p.proc != nil {
		p.proc.Kill()
	}
	return nil
}

// errPluginClosed is the cause of the calls Close ends.
var errPluginClosed = errors.New("the plugin was closed")

// Failures is the number of calls that failed to reach the plugin, over
// all its kinds, endpoint policies and codecs.
func (p *Plugin) Failures() uint64 { return p.failures.Load() }

// Err returns the last failure to reach the plugin, or nil.
func (p *Plugin) Err() error {
	p.errMu.Lock()
	defer p.errMu.Unlock()
	return p.lastErr
}

// fail converts the gRPC error of c, a call of a limiter kind's, into the
// host's view of it: a re-raised panic of the implementation, or a counted
// ErrPluginUnavailable.
func (p *Plugin) fail(c call, kind, op string, err error) error {
	return p.failure(c, fmt.Sprintf("kind %q", kind), op, err, true)
}

// failure counts, remembers and logs the failure of call c on subject (a
// kind, an endpoint policy) and returns it wrapped in ErrPluginUnavailable.
// With reraise, a panic of the implementation that the plugin reported is
// re-raised instead.
func (p *Plugin) failure(c call, subject, op string, err error, reraise bool) error {
	st, _ := status.FromError(err)
	if reraise && st.Code() == codes.Internal && strings.HasPrefix(st.Message(), panicPrefix) {
		panic(strings.TrimPrefix(st.Message(), panicPrefix))
	}
	var wrapped error
	switch {
	case p.closed.Load():
		wrapped = fmt.Errorf("%w: %s: %s: client closed: %v", ErrPluginUnavailable, subject, op, err)
	case c.timedOut():
		wrapped = fmt.Errorf("%w: %s: %s: no answer within the call timeout %v: %v", ErrPluginUnavailable, subject, op, p.callTimeout, err)
	case p.Exited():
		wrapped = fmt.Errorf("%w: %s: %s: %w: %v", ErrPluginUnavailable, subject, op, ErrPluginExited, err)
	default:
		wrapped = fmt.Errorf("%w: %s: %s: %v", ErrPluginUnavailable, subject, op, err)
	}
	n := p.failures.Add(1)
	p.errMu.Lock()
	p.lastErr = wrapped
	p.errMu.Unlock()
	if bits.OnesCount64(n) == 1 { // log failures 1, 2, 4, 8, ...: no flood
		p.logger.Error("plugin call failed", "failures", n, "error", wrapped)
	}
	return wrapped
}
