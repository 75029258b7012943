package concurrency

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/sluicerpc/sluice/spi"
)

// MaxLimit is the largest limit a Limiter accepts.
const MaxLimit = 1<<31 - 1

// Limiter is a live-resizable concurrency budget. The zero value is not
// usable; call New.
type Limiter struct {
	// word packs limit (high 32 bits) and held units (low 32 bits).
	word atomic.Uint64
}

var _ spi.Limiter = (*Limiter)(nil)

func pack(limit, held uint32) uint64       { return uint64(limit)<<32 | uint64(held) }
func unpack(w uint64) (limit, held uint32) { return uint32(w >> 32), uint32(w) }

// New returns a limiter admitting up to limit concurrent units. It panics if
// limit is outside [1, MaxLimit].
func New(limit int64) *Limiter {
	if err := checkLimit(limit); err != nil {
		panic("concurrency: " + err.Error())
	}
	l := &Limiter{}
	l.word.Store(pack(uint32(limit), 0))
	return l
}

// TryAcquire takes n units if held+n stays within the limit. It never blocks.
// now is ignored.
func (l *Limiter) TryAcquire(_ time.Time, n int64) spi.Decision {
	if n <= 0 {
		if n == 0 {
			return spi.Grant()
		}
		panic(fmt.Sprintf("concurrency: acquire of negative units %d", n))
	}
	for {
		w := l.word.Load()
		limit, held := unpack(w)
		if n > int64(limit) {
			return spi.RefuseNever()
		}
		if int64(held)+n > int64(limit) {
			return spi.RefuseUntilRelease()
		}
		if l.word.CompareAndSwap(w, pack(limit, held+uint32(n))) {
			return spi.Grant()
		}
	}
}

// Release returns n held units. It panics if that is more than is held:
// the caller released something twice or something it never held.
func (l *Limiter) Release(_ time.Time, n int64) {
	if n <= 0 {
		if n == 0 {
			return
		}
		panic(fmt.Sprintf("concurrency: release of negative units %d", n))
	}
	for {
		w := l.word.Load()
		limit, held := unpack(w)
		if int64(held) < n {
			panic(fmt.Sprintf("concurrency: released %d units but only %d are held", n, held))
		}
		if l.word.CompareAndSwap(w, pack(limit, held-uint32(n))) {
			return
		}
	}
}

// Cancel is Release: a concurrency grant that was never used is simply
// returned.
func (l *Limiter) Cancel(now time.Time, n int64) { l.Release(now, n) }

// Reconfigure sets a new limit, keeping every holder. p must hold "limit".
func (l *Limiter) Reconfigure(_ time.Time, p spi.Params) error {
	limit, err := limitOf(p)
	if err != nil {
		return err
	}
	l.Resize(limit)
	return nil
}

// Resize sets the limit to limit (in [1, MaxLimit]), atomically with respect
// to every TryAcquire and Release. Holders are kept.
func (l *Limiter) Resize(limit int64) {
	if err := checkLimit(limit); err != nil {
		panic("concurrency: " + err.Error())
	}
	for {
		w := l.word.Load()
		_, held := unpack(w)
		if l.word.CompareAndSwap(w, pack(uint32(limit), held)) {
			return
		}
	}
}

// Limit returns the current limit.
func (l *Limiter) Limit() int64 {
	limit, _ := unpack(l.word.Load())
	return int64(limit)
}

// Held returns the units held now.
func (l *Limiter) Held() int64 {
	_, held := unpack(l.word.Load())
	return int64(held)
}

// Snapshot reports limit, held and available units read at one instant.
func (l *Limiter) Snapshot(time.Time) spi.Snapshot {
	limit, held := unpack(l.word.Load())
	avail := int64(limit) - int64(held)
	if avail < 0 {
		avail = 0
	}
	return spi.Snapshot{Kind: KindName, Limit: int64(limit), InUse: int64(held), Available: avail}
}
