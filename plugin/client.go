package plugin

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"os"
	"os/exec"
	"runtime"
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

// Option configures LoadLimiterKind.
type Option func(*options)

type options struct {
	logger       hclog.Logger
	startTimeout time.Duration
	callTimeout  time.Duration
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
// that times out fails like a call to a crashed plugin.
func WithCallTimeout(d time.Duration) Option { return func(o *options) { o.callTimeout = d } }

// LimiterKindClient is a limiter kind served by a plugin, seen from the
// host. It implements spi.LimiterKind; its limiters live in the plugin
// process, addressed by id, and every call crosses the process boundary
// (tens of microseconds), so plug-in kinds suit remote or coarse-grained
// limits.
//
// Failures: Validate, New and Reconfigure return transport errors (wrapping
// ErrPluginUnavailable) as well as the kind's own errors (a *spi.ParamError
// crosses as one). TryAcquire cannot return an error: when the plugin
// cannot be reached it refuses with spi.RefuseNever(). Release, Cancel and
// Snapshot cannot either (Snapshot then returns a snapshot with only Kind
// set). Every such failure is counted by Failures, remembered by Err (also
// on the limiter, see Limiter.Err) and logged. A panic of the
// implementation inside the plugin is re-raised in the host's caller.
type LimiterKindClient struct {
	rpc         pb.LimiterKindClient
	name        string
	class       spi.Class
	logger      hclog.Logger
	callTimeout time.Duration

	proc   *goplugin.Client // nil when not started by LoadLimiterKind
	closed atomic.Bool

	failures atomic.Uint64
	errMu    sync.Mutex
	lastErr  error
}

var _ spi.LimiterKind = (*LimiterKindClient)(nil)

func newLimiterKindClient(ctx context.Context, rpc pb.LimiterKindClient, o options) (*LimiterKindClient, error) {
	k := &LimiterKindClient{rpc: rpc, logger: o.log(), callTimeout: o.callTimeout}
	ctx, cancel := context.WithTimeout(ctx, k.callTimeout)
	defer cancel()
	info, err := rpc.Describe(ctx, &pb.Empty{})
	if err != nil {
		return nil, fmt.Errorf("%w: describe: %v", ErrPluginUnavailable, err)
	}
	k.name, k.class = info.GetName(), spi.Class(info.GetClass())
	return k, nil
}

// LoadLimiterKind starts the plugin binary at path, completes the
// handshake and returns the kind it serves. Close kills the plugin; a
// plugin also exits by itself when the host process dies. Processes the
// plugin starts itself are not killed by Close.
func LoadLimiterKind(path string, opts ...Option) (*LimiterKindClient, error) {
	o := defaultOptions()
	for _, opt := range opts {
		opt(&o)
	}
	cmd := exec.Command(path)
	cmd.Env = append(os.Environ(), hostPIDEnv+"="+strconv.Itoa(os.Getpid()))
	c := goplugin.NewClient(&goplugin.ClientConfig{
		HandshakeConfig:  Handshake,
		Plugins:          goplugin.PluginSet{limiterKindPluginName: &limiterKindPlugin{opts: o}},
		Cmd:              cmd,
		AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
		Logger:           o.log(),
		StartTimeout:     o.startTimeout,
	})
	rc, err := c.Client()
	if err != nil {
		c.Kill()
		return nil, fmt.Errorf("sluice/plugin: start %s: %w", path, err)
	}
	raw, err := rc.Dispense(limiterKindPluginName)
	if err != nil {
		c.Kill()
		return nil, fmt.Errorf("sluice/plugin: %s: %w", path, err)
	}
	k := raw.(*LimiterKindClient)
	k.proc = c
	return k, nil
}

// Name returns the name the plugin's kind reported at load.
func (k *LimiterKindClient) Name() string { return k.name }

// Class returns the class the plugin's kind reported at load.
func (k *LimiterKindClient) Class() spi.Class { return k.class }

// Register registers k in reg under its name.
func (k *LimiterKindClient) Register(reg *spi.Registry) error { return reg.Register(k) }

// Pid returns the plugin's process id, or 0 if k did not start a process.
func (k *LimiterKindClient) Pid() int {
	if k.proc == nil {
		return 0
	}
	if rc := k.proc.ReattachConfig(); rc != nil {
		return rc.Pid
	}
	return 0
}

// Close kills the plugin process (if k started one). Limiters of k fail
// afterwards. Close is idempotent.
func (k *LimiterKindClient) Close() error {
	if k.closed.Swap(true) {
		return nil
	}
	if k.proc != nil {
		k.proc.Kill()
	}
	return nil
}

// Failures is the number of calls that failed to reach the plugin.
func (k *LimiterKindClient) Failures() uint64 { return k.failures.Load() }

// Err returns the last failure to reach the plugin, or nil.
func (k *LimiterKindClient) Err() error {
	k.errMu.Lock()
	defer k.errMu.Unlock()
	return k.lastErr
}

// Validate asks the plugin's kind to validate p.
func (k *LimiterKindClient) Validate(p spi.Params) error {
	ctx, cancel := k.ctx()
	defer cancel()
	r, err := k.rpc.Validate(ctx, &pb.ValidateRequest{Params: toParams(p)})
	if err != nil {
		return k.fail("validate", err)
	}
	return fromError(r.GetError())
}

// New creates a limiter in the plugin and returns its proxy, a *Limiter.
// The plugin forgets the limiter once the proxy is garbage collected.
func (k *LimiterKindClient) New(p spi.Params, now time.Time) (spi.Limiter, error) {
	ctx, cancel := k.ctx()
	defer cancel()
	r, err := k.rpc.New(ctx, &pb.NewRequest{Params: toParams(p), Now: toTime(now)})
	if err != nil {
		return nil, k.fail("new", err)
	}
	if err := fromError(r.GetError()); err != nil {
		return nil, err
	}
	l := &Limiter{k: k, id: r.GetId()}
	runtime.AddCleanup(l, k.drop, l.id)
	return l, nil
}

func (k *LimiterKindClient) drop(id uint64) {
	if k.closed.Load() {
		return
	}
	ctx, cancel := k.ctx()
	defer cancel()
	if _, err := k.rpc.Drop(ctx, &pb.DropRequest{Id: id}); err != nil {
		k.logger.Debug("dropping a plugin limiter failed", "kind", k.name, "id", id, "error", err)
	}
}

func (k *LimiterKindClient) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), k.callTimeout)
}

// fail converts a gRPC error into the host's view of it: a re-raised panic
// of the implementation, or a counted ErrPluginUnavailable.
func (k *LimiterKindClient) fail(op string, err error) error {
	st, _ := status.FromError(err)
	if st.Code() == codes.Internal && strings.HasPrefix(st.Message(), panicPrefix) {
		panic(strings.TrimPrefix(st.Message(), panicPrefix))
	}
	var wrapped error
	switch {
	case k.closed.Load():
		wrapped = fmt.Errorf("%w: kind %q: %s: client closed: %v", ErrPluginUnavailable, k.name, op, err)
	case k.proc != nil && k.proc.Exited():
		wrapped = fmt.Errorf("%w: kind %q: %s: %w: %v", ErrPluginUnavailable, k.name, op, ErrPluginExited, err)
	default:
		wrapped = fmt.Errorf("%w: kind %q: %s: %v", ErrPluginUnavailable, k.name, op, err)
	}
	n := k.failures.Add(1)
	k.errMu.Lock()
	k.lastErr = wrapped
	k.errMu.Unlock()
	if bits.OnesCount64(n) == 1 { // log failures 1, 2, 4, 8, ...: no flood
		k.logger.Error("plugin call failed", "failures", n, "error", wrapped)
	}
	return wrapped
}

// Limiter is the host-side proxy of a limiter living in a plugin.
type Limiter struct {
	k  *LimiterKindClient
	id uint64

	errMu   sync.Mutex
	lastErr error
}

var _ spi.Limiter = (*Limiter)(nil)

func (l *Limiter) fail(op string, err error) {
	err = l.k.fail(op, err)
	l.errMu.Lock()
	l.lastErr = err
	l.errMu.Unlock()
}

// Err returns the last failure of a call on l to reach the plugin, or nil.
func (l *Limiter) Err() error {
	l.errMu.Lock()
	defer l.errMu.Unlock()
	return l.lastErr
}

// TryAcquire asks the plugin's limiter. If the plugin cannot be reached it
// refuses with spi.RefuseNever(); see Err.
func (l *Limiter) TryAcquire(now time.Time, n int64) spi.Decision {
	ctx, cancel := l.k.ctx()
	defer cancel()
	r, err := l.k.rpc.TryAcquire(ctx, &pb.UnitsRequest{Id: l.id, Now: toTime(now), N: n})
	if err != nil {
		l.fail("try-acquire", err)
		return spi.RefuseNever()
	}
	return fromDecision(r)
}

// Release returns n units to the plugin's limiter. A failure is recorded,
// see Err.
func (l *Limiter) Release(now time.Time, n int64) {
	ctx, cancel := l.k.ctx()
	defer cancel()
	if _, err := l.k.rpc.Release(ctx, &pb.UnitsRequest{Id: l.id, Now: toTime(now), N: n}); err != nil {
		l.fail("release", err)
	}
}

// Cancel cancels n units in the plugin's limiter. A failure is recorded,
// see Err.
func (l *Limiter) Cancel(now time.Time, n int64) {
	ctx, cancel := l.k.ctx()
	defer cancel()
	if _, err := l.k.rpc.Cancel(ctx, &pb.UnitsRequest{Id: l.id, Now: toTime(now), N: n}); err != nil {
		l.fail("cancel", err)
	}
}

// Reconfigure reconfigures the plugin's limiter; it returns the limiter's
// error or the failure to reach the plugin.
func (l *Limiter) Reconfigure(now time.Time, p spi.Params) error {
	ctx, cancel := l.k.ctx()
	defer cancel()
	r, err := l.k.rpc.Reconfigure(ctx, &pb.ReconfigureRequest{Id: l.id, Now: toTime(now), Params: toParams(p)})
	if err != nil {
		l.fail("reconfigure", err)
		return l.Err()
	}
	return fromError(r.GetError())
}

// Snapshot returns the plugin's limiter's snapshot. If the plugin cannot be
// reached it returns a snapshot with only Kind set; see Err.
func (l *Limiter) Snapshot(now time.Time) spi.Snapshot {
	ctx, cancel := l.k.ctx()
	defer cancel()
	r, err := l.k.rpc.Snapshot(ctx, &pb.SnapshotRequest{Id: l.id, Now: toTime(now)})
	if err != nil {
		l.fail("snapshot", err)
		return spi.Snapshot{Kind: l.k.name}
	}
	return spi.Snapshot{Kind: r.GetKind(), Limit: r.GetLimit(), InUse: r.GetInUse(), Available: r.GetAvailable()}
}
