package concurrency_test

import (
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/sluicerpc/sluice/limiters/concurrency"
	"github.com/sluicerpc/sluice/spi"
)

// TestLimiterStateMachine checks the limiter against a model (limit, the
// grants held) over random sequences of acquire, release, cancel, resize and
// reconfigure.
func TestLimiterStateMachine(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		limit := rapid.Int64Range(1, 10).Draw(t, "initial limit")
		l := concurrency.New(limit)
		var grants []int64 // sizes of the grants currently held
		held := int64(0)

		// now is arbitrary: a concurrency limiter ignores time.
		now := time.Unix(rapid.Int64Range(0, 1<<40).Draw(t, "now"), 0)

		giveBack := func(t *rapid.T, cancel bool) {
			if len(grants) == 0 {
				t.Skip("nothing held")
			}
			i := rapid.IntRange(0, len(grants)-1).Draw(t, "grant")
			n := grants[i]
			grants = append(grants[:i], grants[i+1:]...)
			if cancel {
				l.Cancel(now, n)
			} else {
				l.Release(now, n)
			}
			held -= n
		}

		t.Repeat(map[string]func(*rapid.T){
			"acquire": func(t *rapid.T) {
				n := rapid.Int64Range(1, 3).Draw(t, "n")
				var want spi.Decision
				switch {
				case n > limit:
					want = spi.RefuseNever()
				case held+n > limit:
					want = spi.RefuseUntilRelease()
				default:
					want = spi.Grant()
				}
				got := l.TryAcquire(now, n)
				if got != want {
					t.Fatalf("TryAcquire(%d) with limit %d, held %d = %+v, want %+v", n, limit, held, got, want)
				}
				if got.Granted {
					grants = append(grants, n)
					held += n
				}
			},
			"acquire zero": func(t *rapid.T) {
				if got := l.TryAcquire(now, 0); got != spi.Grant() {
					t.Fatalf("TryAcquire(0) = %+v, want a grant", got)
				}
			},
			"release": func(t *rapid.T) { giveBack(t, false) },
			"cancel":  func(t *rapid.T) { giveBack(t, true) },
			"resize": func(t *rapid.T) {
				limit = rapid.Int64Range(1, 10).Draw(t, "limit")
				l.Resize(limit)
			},
			"reconfigure": func(t *rapid.T) {
				next := rapid.Int64Range(-1, 11).Draw(t, "reconfigure limit")
				err := l.Reconfigure(now, spi.Params{concurrency.ParamLimit: next})
				if next < 1 { // 0 and -1 are invalid
					if err == nil {
						t.Fatalf("Reconfigure(limit=%d) succeeded", next)
					}
					return // the model is unchanged
				}
				if err != nil {
					t.Fatalf("Reconfigure(limit=%d): %v", next, err)
				}
				limit = next
			},
			"": func(t *rapid.T) {
				want := spi.Snapshot{Kind: "concurrency", Limit: limit, InUse: held, Available: max(0, limit-held)}
				if got := l.Snapshot(now); got != want {
					t.Fatalf("Snapshot = %+v, want %+v", got, want)
				}
				if l.Limit() != limit || l.Held() != held {
					t.Fatalf("Limit/Held = %d/%d, want %d/%d", l.Limit(), l.Held(), limit, held)
				}
			},
		})

		// Giving everything back empties the limiter.
		for _, n := range grants {
			l.Release(now, n)
		}
		if got := l.Held(); got != 0 {
			t.Fatalf("Held after releasing every grant = %d", got)
		}
	})
}
