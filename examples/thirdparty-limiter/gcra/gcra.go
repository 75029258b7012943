package gcra

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/sluicerpc/sluice/spi"
)

// ErrSealed is returned by Reconfigure after Seal.
var ErrSealed = errors.New("gcra: limiter is sealed")

// barrier is inherited usage that counts until until (spi.Inheritor).
type barrier struct {
	units int64
	until int64 // unix ns
}

// Limiter is a GCRA limiter. It is safe for concurrent use.
//
// Concurrency: the state is a handful of words (TAT, the parameters, the
// sealed flag and the inherited barriers) guarded by one tiny mutex, held
// for a few arithmetic operations and never across a call out. A lock-free
// TAT updated by CAS would do for TryAcquire alone, but Reconfigure, Seal
// and Inherit change the parameters and the TAT together, and one mutex
// keeps every figure consistent at one instant without a second protocol.
//
// Instants are Unix nanoseconds; all arithmetic saturates instead of
// overflowing. A caller that arrives with an earlier now than one already
// seen stays on the strict side: the limiter measures from max(TAT, now).
type Limiter struct {
	mu       sync.Mutex
	cfg      config
	tat      int64 // theoretical arrival time, unix ns
	barriers []barrier
	sealed   bool
	// maxN is the most units one TryAcquire asked for; nearAt the latest
	// instant at which the limiter was written within maxN units of its
	// burst (or a publication came): see Cancel. nearAt starts at
	// math.MinInt64.
	maxN   int64
	nearAt int64
}

var (
	_ spi.Limiter   = (*Limiter)(nil)
	_ spi.Handover  = (*Limiter)(nil)
	_ spi.Inheritor = (*Limiter)(nil)
)

// held is the number of inherited units whose barrier is active at t.
func (l *Limiter) held(t int64) int64 {
	var b int64
	for _, e := range l.barriers {
		if e.until > t {
			b = satAdd(b, e.units)
		}
	}
	return b
}

// base is the instant from which a grant at t is measured: the TAT, no
// earlier than t, and no earlier than t plus the interval of every unit
// held by an active barrier.
func (l *Limiter) base(t int64) int64 {
	b := max(l.tat, t)
	if h := l.held(t); h > 0 {
		b = max(b, satAdd(t, satMul(h, l.cfg.interval)))
	}
	return b
}

// debt is the units that count against the burst at t.
func (l *Limiter) debt(t int64) int64 {
	return ceilDiv(satSub(l.base(t), t), l.cfg.interval)
}

// TryAcquire takes n units at now iff max(TAT, now) + n*interval - now <=
// burst*interval (and the inherited barriers leave room for n). A refusal
// carries the exact instant at which the same request would be granted, or
// spi.RefuseNever when n exceeds the burst (or after Seal). n == 0 is
// granted; a negative n panics.
func (l *Limiter) TryAcquire(now time.Time, n int64) spi.Decision {
	if n < 0 {
		panic(fmt.Sprintf("gcra: TryAcquire of %d units", n))
	}
	t := now.UnixNano()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sealed || n > l.cfg.burst {
		return spi.RefuseNever()
	}
	if n == 0 {
		return spi.Grant()
	}
	i := l.cfg.interval
	b := l.base(t)
	l.maxN = max(l.maxN, n)
	if satSub(b, t) <= (l.cfg.burst-n)*i {
		l.noteNear(t, b)
		l.tat = satAdd(b, n*i)
		return spi.Grant()
	}
	return spi.RefuseUntil(time.Unix(0, l.retryAt(t, n)))
}

// retryAt is the first instant r > t at which n units could be granted:
// TAT - r <= (burst-n)*interval, and the units of the barriers still active
// at r leave room for n.
func (l *Limiter) retryAt(t, n int64) int64 {
	r := max(t, satSub(l.tat, (l.cfg.burst-n)*l.cfg.interval))
	for l.held(r)+n > l.cfg.burst {
		// The next barrier to expire after r: at its until it is released.
		next := int64(math.MaxInt64)
		for _, e := range l.barriers {
			if e.until > r && e.until < next {
				next = e.until
			}
		}
		r = next
		if next == math.MaxInt64 {
			break
		}
	}
	return r
}

// Release is a no-op: taken quota stays taken.
func (l *Limiter) Release(time.Time, int64) {}

// noteNear records a write at t from base b (see base) that finds the
// limiter within maxN units of its burst: a grant outstanding then, had it
// never been made, would have left the limiter at its burst there, and
// the credit beyond it would have been lost.
func (l *Limiter) noteNear(t, b int64) {
	if satSub(b, t) < satMul(l.maxN, l.cfg.interval) {
		l.nearAt = max(l.nearAt, t)
	}
}

// Cancel gives back n units granted at now (the grant's instant, also when
// the Cancel comes late, spi.Limiter.Cancel) and never used: TAT moves back
// by n*interval, never below now, unless the limiter has been written
// within maxN units of its burst (maxN: the most units one TryAcquire asked
// for) at an instant after the grant, or reconfigured (or inherited)
// since or at the grant's instant: then its absence may have been lost,
// and nothing comes back (the strict side). Inherited barriers are not affected. Cancel after Seal, or
// of n <= 0, is ignored.
func (l *Limiter) Cancel(now time.Time, n int64) {
	if n <= 0 {
		return
	}
	t := now.UnixNano()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sealed || l.nearAt > t {
		return
	}
	l.tat = max(satSub(l.tat, satMul(min(n, l.maxN), l.cfg.interval)), t)
	l.noteNear(t, l.base(t))
}

// Reconfigure changes burst and interval at now, keeping the debt: the debt
// in units, ceil((TAT-now)/oldInterval), is repaid at the new interval from
// now. A raised burst never refills: the debt grows by as much as needed so
// that the available units do not increase at the change. A lowered burst
// keeps the debt, so that nothing is granted until it falls below the new
// burst. It returns ErrSealed after Seal.
func (l *Limiter) Reconfigure(now time.Time, p spi.Params) error {
	c, err := parse(p)
	if err != nil {
		return err
	}
	t := now.UnixNano()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sealed {
		return ErrSealed
	}
	own := ceilDiv(satSub(max(l.tat, t), t), l.cfg.interval)
	avail := max(0, l.cfg.burst-l.debt(t))
	d := own
	if c.burst > l.cfg.burst {
		d = max(d, c.burst-avail)
	}
	l.cfg = c
	l.tat = satAdd(t, satMul(d, c.interval))
	l.published(t)
	return nil
}

// published makes the publication at t a point no Cancel of a grant made
// at or before it crosses: the carried debt already counts the grant, and
// a change of burst may have lost what its absence would have left (a
// raise keeps the available units, clamped at zero, so a debt beyond the
// burst is forgotten). A grant made at t after the publication cannot be
// told from one made before it, so it gets nothing back either (the
// strict side).
func (l *Limiter) published(t int64) {
	l.nearAt = max(l.nearAt, satAdd(t, 1))
}

// Snapshot reports Limit = burst, InUse = the debt in units at now, and
// Available = burst - debt (never negative; 0 after Seal).
func (l *Limiter) Snapshot(now time.Time) spi.Snapshot {
	t := now.UnixNano()
	l.mu.Lock()
	defer l.mu.Unlock()
	d := l.debt(t)
	s := spi.Snapshot{Kind: Name, Limit: l.cfg.burst, InUse: d, Available: max(0, l.cfg.burst-d)}
	if l.sealed {
		s.Available = 0
	}
	return s
}

// Seal freezes the limiter at now (spi.Handover) and returns the usage that
// counts there: its own debt as one entry {Units: debt, Until: TAT} (the
// instant the whole debt is repaid), and each inherited barrier still
// active at now, with its own units and until; the units add up to the debt
// Snapshot reports. Afterwards TryAcquire refuses with spi.RefuseNever,
// Cancel and Inherit are ignored, Reconfigure returns ErrSealed and
// Snapshot keeps reporting the debt, with Available 0. A second Seal
// returns nil.
func (l *Limiter) Seal(now time.Time) []spi.Usage {
	t := now.UnixNano()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sealed {
		return nil
	}
	l.sealed = true
	var usage []spi.Usage
	var active []spi.Usage
	held := int64(0)
	for _, e := range l.barriers {
		if e.until > t {
			held = satAdd(held, e.units)
			active = append(active, spi.Usage{Units: e.units, Until: time.Unix(0, e.until)})
		}
	}
	if own := l.debt(t) - held; own > 0 {
		usage = append(usage, spi.Usage{Units: own, Until: time.Unix(0, l.tat)})
	}
	return append(usage, active...)
}

// Inherit takes over a predecessor's usage at now (spi.Inheritor): the
// units of every entry are added as debt, TAT = max(TAT, now) +
// units*interval, and each entry whose Until is after now also becomes a
// barrier: until then, its units keep counting even if the TAT has been
// repaid. Inherit after Seal is ignored; negative units panic.
func (l *Limiter) Inherit(now time.Time, usage []spi.Usage) {
	var sum int64
	for _, u := range usage {
		if u.Units < 0 {
			panic(fmt.Sprintf("gcra: inherited usage with negative units %d (until %v)", u.Units, u.Until))
		}
		sum = satAdd(sum, u.Units)
	}
	if sum == 0 {
		return
	}
	t := now.UnixNano()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sealed {
		return
	}
	l.tat = satAdd(l.base(t), satMul(sum, l.cfg.interval))
	for _, u := range usage {
		if until := u.Until.UnixNano(); u.Units > 0 && until > t {
			l.barriers = append(l.barriers, barrier{units: u.Units, until: until})
		}
	}
	l.published(t)
}

// satAdd returns a+b, saturated to the int64 range.
func satAdd(a, b int64) int64 {
	s := a + b
	if a > 0 && b > 0 && s < 0 {
		return math.MaxInt64
	}
	if a < 0 && b < 0 && s >= 0 {
		return math.MinInt64
	}
	return s
}

// satSub returns a-b, saturated to the int64 range.
func satSub(a, b int64) int64 {
	if b == math.MinInt64 {
		if a >= 0 {
			return math.MaxInt64
		}
		return a - b
	}
	return satAdd(a, -b)
}

// satMul returns a*b for a, b >= 0, saturated to math.MaxInt64.
func satMul(a, b int64) int64 {
	if a == 0 || b == 0 {
		return 0
	}
	if a > math.MaxInt64/b {
		return math.MaxInt64
	}
	return a * b
}

// ceilDiv returns ceil(a/b) for a >= 0 (0 for a <= 0) and b > 0.
func ceilDiv(a, b int64) int64 {
	if a <= 0 {
		return 0
	}
	return a/b + min(1, a%b)
}
