package plugin

import (
	"runtime"
	"sync"
	"time"

	"github.com/sluicerpc/sluice/plugin/internal/pb"
	"github.com/sluicerpc/sluice/spi"
)

// LimiterKindClient is a limiter kind served by a plugin, seen from the
// host. It implements spi.LimiterKind; its limiters live in the plugin
// process, addressed by id, and every call crosses the process boundary
// (tens of microseconds), so plug-in kinds suit remote or coarse-grained
// limits. It is safe for concurrent use.
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
	p     *Plugin
	name  string
	class spi.Class
	caps  *pb.Capabilities // nil: none declared
}

var _ spi.LimiterKind = (*LimiterKindClient)(nil)

func newLimiterKindClient(p *Plugin, info *pb.KindInfo) *LimiterKindClient {
	return &LimiterKindClient{p: p, name: info.GetName(), class: spi.Class(info.GetClass()), caps: info.GetCapabilities()}
}

// Name returns the name the plugin's kind reported at load.
func (k *LimiterKindClient) Name() string { return k.name }

// Class returns the class the plugin's kind reported at load.
func (k *LimiterKindClient) Class() spi.Class { return k.class }

// Register registers k in reg under its name.
func (k *LimiterKindClient) Register(reg *spi.Registry) error { return reg.Register(k) }

// Plugin returns the plugin that serves k.
func (k *LimiterKindClient) Plugin() *Plugin { return k.p }

// Pid returns the plugin's process id, or 0 if no process was started.
func (k *LimiterKindClient) Pid() int { return k.p.Pid() }

// Close closes the plugin that serves k, and with it every kind it serves:
// limiters of those kinds fail afterwards. Close is idempotent.
func (k *LimiterKindClient) Close() error { return k.p.Close() }

// Failures is the number of calls that failed to reach the plugin, over
// all the kinds it serves.
func (k *LimiterKindClient) Failures() uint64 { return k.p.Failures() }

// Err returns the last failure to reach the plugin, or nil.
func (k *LimiterKindClient) Err() error { return k.p.Err() }

// Validate asks the plugin's kind to validate p.
func (k *LimiterKindClient) Validate(p spi.Params) error {
	c := k.p.watch.begin()
	defer c.end()
	r, err := k.p.rpc.Validate(c.ctx, &pb.ValidateRequest{Kind: k.name, Params: toParams(p)})
	if err != nil {
		return k.fail(c, "validate", err)
	}
	return fromError(r.GetError())
}

// New creates a limiter in the plugin and returns its proxy, a *Limiter.
// The plugin forgets the limiter once the proxy is garbage collected.
func (k *LimiterKindClient) New(p spi.Params, now time.Time) (spi.Limiter, error) {
	c := k.p.watch.begin()
	defer c.end()
	r, err := k.p.rpc.New(c.ctx, &pb.NewRequest{Kind: k.name, Params: toParams(p), Now: toTime(now)})
	if err != nil {
		return nil, k.fail(c, "new", err)
	}
	if err := fromError(r.GetError()); err != nil {
		return nil, err
	}
	l := &Limiter{k: k, id: r.GetId()}
	runtime.AddCleanup(l, k.drop, l.id)
	return l, nil
}

func (k *LimiterKindClient) drop(id uint64) {
	if k.p.closed.Load() {
		return
	}
	c := k.p.watch.begin()
	defer c.end()
	if _, err := k.p.rpc.Drop(c.ctx, &pb.DropRequest{Id: id}); err != nil {
		k.p.logger.Debug("dropping a plugin limiter failed", "kind", k.name, "id", id, "error", err)
	}
}

func (k *LimiterKindClient) fail(c call, op string, err error) error {
	return k.p.fail(c, k.name, op, err)
}

// Limiter is the host-side proxy of a limiter living in a plugin.
type Limiter struct {
	k  *LimiterKindClient
	id uint64

	errMu   sync.Mutex
	lastErr error
}

var _ spi.Limiter = (*Limiter)(nil)

func (l *Limiter) fail(c call, op string, err error) {
	err = l.k.fail(c, op, err)
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
	c := l.k.p.watch.begin()
	defer c.end()
	r, err := l.k.p.rpc.TryAcquire(c.ctx, &pb.UnitsRequest{Id: l.id, Now: toTime(now), N: n})
	if err != nil {
		l.fail(c, "try-acquire", err)
		return spi.RefuseNever()
	}
	return fromDecision(r)
}

// Release returns n units to the plugin's limiter. A failure is recorded,
// see Err.
func (l *Limiter) Release(now time.Time, n int64) {
	c := l.k.p.watch.begin()
	defer c.end()
	if _, err := l.k.p.rpc.Release(c.ctx, &pb.UnitsRequest{Id: l.id, Now: toTime(now), N: n}); err != nil {
		l.fail(c, "release", err)
	}
}

// Cancel cancels n units in the plugin's limiter. A failure is recorded,
// see Err.
func (l *Limiter) Cancel(now time.Time, n int64) {
	c := l.k.p.watch.begin()
	defer c.end()
	if _, err := l.k.p.rpc.Cancel(c.ctx, &pb.UnitsRequest{Id: l.id, Now: toTime(now), N: n}); err != nil {
		l.fail(c, "cancel", err)
	}
}

// Reconfigure reconfigures the plugin's limiter; it returns the limiter's
// error or the failure to reach the plugin.
func (l *Limiter) Reconfigure(now time.Time, p spi.Params) error {
	c := l.k.p.watch.begin()
	defer c.end()
	r, err := l.k.p.rpc.Reconfigure(c.ctx, &pb.ReconfigureRequest{Id: l.id, Now: toTime(now), Params: toParams(p)})
	if err != nil {
		l.fail(c, "reconfigure", err)
		return l.Err()
	}
	return fromError(r.GetError())
}

// Snapshot returns the plugin's limiter's snapshot. If the plugin cannot be
// reached it returns a snapshot with only Kind set; see Err.
func (l *Limiter) Snapshot(now time.Time) spi.Snapshot {
	c := l.k.p.watch.begin()
	defer c.end()
	r, err := l.k.p.rpc.Snapshot(c.ctx, &pb.SnapshotRequest{Id: l.id, Now: toTime(now)})
	if err != nil {
		l.fail(c, "snapshot", err)
		return spi.Snapshot{Kind: l.k.name}
	}
	return spi.Snapshot{Kind: r.GetKind(), Limit: r.GetLimit(), InUse: r.GetInUse(), Available: r.GetAvailable()}
}
