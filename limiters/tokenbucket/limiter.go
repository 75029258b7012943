package tokenbucket

import (
	"errors"
	"fmt"
	"math/big"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicerpc/sluice/spi"
)

// ErrSealed is returned by Reconfigure and Update after Seal.
var ErrSealed = errors.New("tokenbucket: the limiter is sealed")

// Limiter is a token bucket whose parameters can be changed live without a
// free burst. The zero value is not usable; call New or Kind.New.
//
// TryAcquire, Cancel and Snapshot take no lock and allocate nothing: they
// read the current config with one atomic load and change its state word by
// compare-and-swap. Reconfigure, Update, Seal and Inherit (the control path)
// are serialized by a mutex; each freezes the current config's word, so that
// no grant can land on a config once its successor is being computed, and
// publishes the successor. A TryAcquire that meets a frozen word waits for
// the successor (a few microseconds at most) and retries on it, so a grant
// racing a change is counted exactly once, on exactly one config.
type Limiter struct {
	cfg atomic.Pointer[config]
	mu  sync.Mutex // serializes the control path
}

var (
	_ spi.Limiter   = (*Limiter)(nil)
	_ spi.Handover  = (*Limiter)(nil)
	_ spi.Inheritor = (*Limiter)(nil)
)

// New returns a full token bucket with options o and its origin at now (the
// instant discrete period boundaries are aligned to). It returns the
// *spi.ParamError of o.Validate.
func New(o Options, now time.Time) (*Limiter, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	return newLimiter(o, now), nil
}

func newLimiter(o Options, now time.Time) *Limiter {
	l := &Limiter{}
	l.cfg.Store(build(o, now, 0, big.NewInt(o.TokenLimit), 1, nil, rebuilt))
	return l
}

// Options returns the options in force.
func (l *Limiter) Options() Options { return l.cfg.Load().opts }

// TryAcquire takes n tokens at now if the bucket holds them.
//
// A refusal consumes nothing and is either spi.RefuseUntil(t), with t the
// exact earliest instant at which TryAcquire(t, n) succeeds if nothing else
// happens, or spi.RefuseNever() when n exceeds the capacity (or that
// instant lies more than about 292 years after the config's origin). In
// unlimited mode every TryAcquire succeeds and the bucket still counts: it
// loses n tokens, but never goes below zero. n == 0 is always granted; a
// negative n panics. After Seal every request is refused with
// spi.RefuseNever().
func (l *Limiter) TryAcquire(now time.Time, n int64) spi.Decision {
	if n <= 0 {
		if n == 0 {
			return spi.Grant()
		}
		panic(fmt.Sprintf("tokenbucket: acquire of negative units %d", n))
	}
	for {
		c := l.cfg.Load()
		if c.sealed {
			return spi.RefuseNever()
		}
		e := c.offset(now)
		if e > c.eLimit {
			l.republish(c, e)
			continue
		}
		w := c.word.Load()
		if w == frozen {
			l.awaitSuccessor(c)
			continue
		}
		cr := c.credit(e)
		avail := min(c.capS, cr-w)
		if n > c.maxN.Load() && n <= c.limit {
			c.raiseMaxN(n) // before the rewrite: see config.maxN
		}
		if c.unlimited {
			next := min(avail, 0)
			if n <= c.limit && avail >= n*c.scale {
				next = avail - n*c.scale
			}
			if next == avail || c.word.CompareAndSwap(w, cr-next) {
				return spi.Grant()
			}
			continue
		}
		if n > c.limit {
			return spi.RefuseNever()
		}
		need := n * c.scale
		if avail < need {
			return c.refuse(e, avail, need)
		}
		if c.nearCap(cr - w) {
			c.noteFull(e) // before the rewrite: see config.full
		}
		if c.word.CompareAndSwap(w, cr-avail+need) {
			return spi.Grant()
		}
	}
}

func (c *config) refuse(e, avail, need int64) spi.Decision {
	t := c.earliest(e, avail, need)
	if t < 0 {
		return spi.RefuseNever()
	}
	return spi.RefuseUntil(c.origin.Add(time.Duration(t)))
}

// Release is a no-op: taken rate quota stays taken. A negative n panics.
func (l *Limiter) Release(_ time.Time, n int64) {
	if n < 0 {
		panic(fmt.Sprintf("tokenbucket: release of negative units %d", n))
	}
}

// Cancel gives back n tokens that were granted at now but never used,
// capped at what the bucket can hold (the capacity less active barriers).
// The kernel calls it at the instant of the grant to undo an
// all-or-nothing acquisition, and later, still with the grant's instant,
// for a request refused after admission (spi.Limiter.Cancel).
//
// A late Cancel gives back only what the grant's absence would have left.
// The bucket without the grant would have held n more tokens ever since,
// unless refill took it to the cap, where the difference was lost. So the
// tokens come back in full unless, at an instant after the grant, the
// bucket was written (a grant, a Cancel) or rebuilt within a margin of its
// cap, the margin being the most tokens one TryAcquire has asked for: then
// nothing comes back (the exact remainder, between nothing and n, is not tracked;
// nothing is the strict side). For the kernel, whose grants take one
// token each, that is exact: a give-back is lost only when the bucket came
// within one token of full, when its absence would have been lost at the
// cap too. Nor does anything come back for a grant made before a
// publication (Reconfigure, Update, Inherit): the carried state already
// counted it, by options that may have counted it differently; nor for one
// made at its very instant when the publication carried the bucket within
// the margin of its new cap (the predecessor's grant would have been lost
// at that cap, and a grant after the publication cannot be told from it).
// A token
// bucket does not track its grants, so it cannot tell a double Cancel from
// a legitimate one; the cap keeps either harmless.
//
// At the instant of a publication (Reconfigure, Update, Inherit) Cancel
// cannot raise the bucket above the tokens the publication carried: the
// grant may have been made before it, by options that counted it
// differently (an unlimited bucket may not have taken the units at all),
// and the carried state already reflects it. That is too strict by at most
// the units of a request racing a publication, never looser.
//
// Cancel is a no-op in unlimited mode, where a grant may have taken fewer
// tokens than it was granted (the bucket does not go below zero), so
// giving n back could leave more than the traffic did; and after Seal,
// where the grant was handed over. A negative n panics.
func (l *Limiter) Cancel(now time.Time, n int64) {
	if n <= 0 {
		if n == 0 {
			return
		}
		panic(fmt.Sprintf("tokenbucket: cancel of negative units %d", n))
	}
	for {
		c := l.cfg.Load()
		if c.sealed || c.unlimited {
			return
		}
		e := c.offset(now)
		if e > c.eLimit {
			l.republish(c, e)
			continue
		}
		w := c.word.Load()
		if w == frozen {
			l.awaitSuccessor(c)
			continue
		}
		if c.fullSince(now) { // read after the word: see config.full
			return
		}
		n = min(n, c.maxN.Load()) // no grant took more
		cr := c.credit(e)
		avail := min(c.capS, cr-w)
		ceil := c.capS
		if e <= c.pubE {
			ceil = min(ceil, c.pubS)
		}
		if avail >= ceil {
			return
		}
		next := ceil
		if room := ceil - avail; n <= (room-1)/c.scale {
			next = avail + n*c.scale
		}
		if c.nearCap(next) {
			c.noteFull(e)
		}
		if c.word.CompareAndSwap(w, cr-next) {
			return
		}
	}
}

// Snapshot reports the bucket at now, read from one state word: Limit is
// the capacity; InUse is the capacity less the whole tokens held (the
// debt, at least the active barriers; above the capacity while the bucket
// is in debt); Available is what TryAcquire(now, n) could grant: the whole
// tokens held, at least 0, and 0 after Seal. In unlimited mode the figures
// describe the counting bucket, although TryAcquire grants anything.
func (l *Limiter) Snapshot(now time.Time) spi.Snapshot {
	for {
		c := l.cfg.Load()
		w := c.word.Load()
		if w == frozen {
			l.awaitSuccessor(c)
			continue
		}
		tokens := floorDiv(c.project(w, c.offset(now)), c.scale)
		avail := max(tokens, 0)
		if c.sealed {
			avail = 0
		}
		return spi.Snapshot{Kind: KindName, Limit: c.limit, InUse: c.limit - tokens, Available: avail}
	}
}

// Reconfigure changes the parameters at now, keeping the state (see Update).
// Invalid parameters return the *spi.ParamError of ParseParams and change
// nothing; after Seal it returns ErrSealed.
func (l *Limiter) Reconfigure(now time.Time, p spi.Params) error {
	o, err := ParseParams(p)
	if err != nil {
		return err
	}
	return l.update(now, o)
}

// Update changes the options at now. The bucket is first advanced to now
// under the old options, then:
//
//   - its tokens carry over, capped at the new capacity: raising the
//     capacity never refills;
//   - a cadence change (Period, TokensPerPeriod or Continuous) grants no
//     extra period at publication: the period restarts at now, so a
//     discrete bucket's next refill is one full new period after now (the
//     progress of the interrupted period is forfeited); a change of only
//     TokenLimit or Unlimited keeps the phase;
//   - when the scale of the fixed point changes (see MaxContinuousScale),
//     a fraction of a token that the new scale cannot express is dropped;
//   - inherited barriers are kept: the bucket never holds more than the
//     new capacity less their units (a capacity lowered below them leaves
//     the bucket in debt, and nobody is admitted while they hold it);
//   - at now, a Cancel cannot lift the bucket above what was carried (see
//     Cancel).
//
// Options equal to those in force keep the tokens, the phase and the
// barriers exactly, but the call is still a publication at now: a caller
// arriving afterwards with an earlier instant is served from the bucket as
// it was at now, never from before a refill that now already counted, and
// no late Cancel crosses it. (Without that, a late caller could take a
// token from before a refill that was lost at the cap and get it back from
// the refill: a free token at the publication.) Invalid options return the
// *spi.ParamError of o.Validate and change nothing; after Seal it returns
// ErrSealed.
func (l *Limiter) Update(now time.Time, o Options) error {
	if err := o.Validate(); err != nil {
		return err
	}
	return l.update(now, o)
}

func (l *Limiter) update(now time.Time, o Options) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if c := l.cfg.Load(); c.sealed {
		return ErrSealed
	}
	c, w := l.freeze()
	l.cfg.Store(c.successor(w, c.offset(now), o, nil, published))
	return nil
}

// freeze takes over the current config's word and returns the config and
// the word's last value. l.mu is held and the config is not sealed.
func (l *Limiter) freeze() (*config, int64) {
	for {
		c := l.cfg.Load()
		w := c.word.Load()
		if w == frozen {
			l.awaitSuccessor(c)
			continue
		}
		if c.word.CompareAndSwap(w, frozen) {
			return c, w
		}
	}
}

// republish replaces c, which can no longer serve offset e on the hot path
// (a barrier expired, or its credit clock grew large), by an equivalent
// config with the same options and phase. Whoever freezes c's word (this
// call, a concurrent one, or the control path) publishes c's successor.
func (l *Limiter) republish(c *config, e int64) {
	w := c.word.Load()
	if w == frozen {
		l.awaitSuccessor(c)
		return
	}
	if c.word.CompareAndSwap(w, frozen) {
		l.cfg.Store(c.successor(w, e, c.opts, nil, rebuilt))
	}
}

// awaitSuccessor waits until c, whose word is frozen, has been replaced.
func (l *Limiter) awaitSuccessor(c *config) {
	for l.cfg.Load() == c {
		runtime.Gosched()
	}
}
