package gcra_test

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluicerpc/sluice/examples/thirdparty-limiter/gcra"
	"github.com/sluicerpc/sluice/spi"
)

var t0 = time.Date(2030, time.January, 1, 0, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

func newLimiter(t *testing.T, burst int64, interval time.Duration) *gcra.Limiter {
	t.Helper()
	l, err := gcra.Kind{}.New(gcra.Params(burst, interval), t0)
	if err != nil {
		t.Fatal(err)
	}
	return l.(*gcra.Limiter)
}

func wantSnapshot(t *testing.T, l spi.Limiter, now time.Time, limit, inUse, avail int64) {
	t.Helper()
	s := l.Snapshot(now)
	want := spi.Snapshot{Kind: gcra.Name, Limit: limit, InUse: inUse, Available: avail}
	if s != want {
		t.Fatalf("Snapshot(%v) = %+v, want %+v", now.Sub(t0), s, want)
	}
}

func wantRefuseUntil(t *testing.T, d spi.Decision, retry time.Time) {
	t.Helper()
	if d.Granted || d.Hint != spi.HintAt || !d.RetryAt.Equal(retry) {
		t.Fatalf("got %+v, want RefuseUntil(%v)", d, retry.Sub(t0))
	}
}

func TestKind(t *testing.T) {
	k := gcra.Kind{}
	if k.Name() != "example.com/gcra" || k.Class() != spi.ClassRate {
		t.Fatalf("Name %q Class %v", k.Name(), k.Class())
	}
	var reg spi.Registry
	if err := reg.Register(k); err != nil {
		t.Fatal(err)
	}
}

func TestValidate(t *testing.T) {
	ok := []spi.Params{
		gcra.Params(1, time.Microsecond),
		gcra.Params(1<<20, time.Millisecond),
		gcra.Params(5, 24*time.Hour),
	}
	for _, p := range ok {
		if err := (gcra.Kind{}).Validate(p); err != nil {
			t.Errorf("Validate(%v): %v", p, err)
		}
	}
	bad := map[string]spi.Params{
		"burst":    gcra.Params(0, time.Second),
		"burst ":   gcra.Params(1<<20+1, time.Second),
		"interval": gcra.Params(1, time.Microsecond-1),
		"extra":    {gcra.ParamBurst: 1, gcra.ParamInterval: int64(time.Second), "extra": 1},
		"missing":  {gcra.ParamBurst: 1},
		"horizon":  gcra.Params(1<<20, 24*time.Hour),
	}
	for name, p := range bad {
		err := (gcra.Kind{}).Validate(p)
		var pe *spi.ParamError
		if !errors.As(err, &pe) {
			t.Errorf("%s: Validate(%v) = %v, want a *spi.ParamError", name, p, err)
		}
		if _, err := (gcra.Kind{}).New(p, t0); err == nil {
			t.Errorf("%s: New(%v) succeeded", name, p)
		}
	}
}

func TestTryAcquire(t *testing.T) {
	const iv = 10 * time.Millisecond
	l := newLimiter(t, 3, iv)
	wantSnapshot(t, l, t0, 3, 0, 3)
	for i := range 3 {
		if d := l.TryAcquire(t0, 1); !d.Granted {
			t.Fatalf("unit %d refused: %+v", i, d)
		}
	}
	wantSnapshot(t, l, t0, 3, 3, 0)
	// TAT = t0+30ms; one unit needs TAT + I - now <= 3I, i.e. now >= t0+10ms.
	wantRefuseUntil(t, l.TryAcquire(t0, 1), at(iv))
	wantRefuseUntil(t, l.TryAcquire(at(iv-1), 1), at(iv))
	wantRefuseUntil(t, l.TryAcquire(at(5*time.Millisecond), 2), at(2*iv))
	wantSnapshot(t, l, at(5*time.Millisecond), 3, 3, 0)
	wantSnapshot(t, l, at(iv), 3, 2, 1)
	if d := l.TryAcquire(at(iv), 1); !d.Granted {
		t.Fatalf("refused at the hint: %+v", d)
	}
	if d := l.TryAcquire(at(time.Hour), 4); d != spi.RefuseNever() {
		t.Fatalf("n > burst: got %+v, want RefuseNever", d)
	}
	if d := l.TryAcquire(at(time.Hour), 0); !d.Granted {
		t.Fatalf("n == 0: got %+v", d)
	}
	// Idle for long: full, but never above the burst.
	wantSnapshot(t, l, at(time.Hour), 3, 0, 3)
	if d := l.TryAcquire(at(time.Hour), 3); !d.Granted {
		t.Fatalf("full burst refused: %+v", d)
	}
	if d := l.TryAcquire(at(time.Hour), 1); d.Granted {
		t.Fatal("granted above the burst")
	}
}

func TestCancel(t *testing.T) {
	const iv = time.Second
	l := newLimiter(t, 4, iv)
	l.TryAcquire(t0, 3)
	l.Cancel(t0, 2)
	wantSnapshot(t, l, t0, 4, 1, 3)
	// Never below now: cancelling more than the debt leaves a full limiter
	// and no credit.
	l.Cancel(t0, 10)
	wantSnapshot(t, l, t0, 4, 0, 4)
	if d := l.TryAcquire(t0, 4); !d.Granted {
		t.Fatalf("refused: %+v", d)
	}
	if d := l.TryAcquire(t0, 1); d.Granted {
		t.Fatal("cancel created credit")
	}
	l.Release(t0, 4) // no-op
	wantSnapshot(t, l, t0, 4, 4, 0)
}

func TestReconfigure(t *testing.T) {
	const iv = 10 * time.Millisecond
	t.Run("debt carries to the new interval", func(t *testing.T) {
		l := newLimiter(t, 4, iv)
		l.TryAcquire(t0, 3)
		// At +5ms the debt is ceil(25/10) = 3 units.
		if err := l.Reconfigure(at(5*time.Millisecond), gcra.Params(4, time.Second)); err != nil {
			t.Fatal(err)
		}
		wantSnapshot(t, l, at(5*time.Millisecond), 4, 3, 1)
		wantSnapshot(t, l, at(5*time.Millisecond+time.Second-1), 4, 3, 1)
		wantSnapshot(t, l, at(5*time.Millisecond+time.Second), 4, 2, 2)
	})
	t.Run("raise never refills", func(t *testing.T) {
		l := newLimiter(t, 4, iv)
		l.TryAcquire(t0, 3)
		if err := l.Reconfigure(t0, gcra.Params(10, iv)); err != nil {
			t.Fatal(err)
		}
		wantSnapshot(t, l, t0, 10, 9, 1)
		wantRefuseUntil(t, l.TryAcquire(t0, 2), at(iv))
		wantSnapshot(t, l, at(90*time.Millisecond), 10, 0, 10)
	})
	t.Run("raise of a full limiter", func(t *testing.T) {
		l := newLimiter(t, 4, iv)
		if err := l.Reconfigure(t0, gcra.Params(6, iv)); err != nil {
			t.Fatal(err)
		}
		wantSnapshot(t, l, t0, 6, 2, 4)
	})
	t.Run("lower never revokes", func(t *testing.T) {
		l := newLimiter(t, 8, iv)
		l.TryAcquire(t0, 6)
		if err := l.Reconfigure(t0, gcra.Params(2, iv)); err != nil {
			t.Fatal(err)
		}
		wantSnapshot(t, l, t0, 2, 6, 0)
		wantRefuseUntil(t, l.TryAcquire(t0, 1), at(5*iv))
	})
	t.Run("invalid params change nothing", func(t *testing.T) {
		l := newLimiter(t, 4, iv)
		l.TryAcquire(t0, 1)
		if err := l.Reconfigure(t0, gcra.Params(0, iv)); err == nil {
			t.Fatal("accepted burst 0")
		}
		wantSnapshot(t, l, t0, 4, 1, 3)
	})
}

func TestSeal(t *testing.T) {
	const iv = 10 * time.Millisecond
	l := newLimiter(t, 5, iv)
	l.TryAcquire(t0, 3)
	got := l.Seal(at(5 * time.Millisecond))
	want := []spi.Usage{{Units: 3, Until: at(30 * time.Millisecond)}}
	if len(got) != 1 || got[0].Units != want[0].Units || !got[0].Until.Equal(want[0].Until) {
		t.Fatalf("Seal = %v, want %v", got, want)
	}
	if d := l.TryAcquire(at(time.Hour), 1); d != spi.RefuseNever() {
		t.Fatalf("after Seal: %+v", d)
	}
	l.Cancel(at(5*time.Millisecond), 3)
	wantSnapshot(t, l, at(5*time.Millisecond), 5, 3, 0)
	if err := l.Reconfigure(t0, gcra.Params(5, iv)); !errors.Is(err, gcra.ErrSealed) {
		t.Fatalf("Reconfigure after Seal: %v", err)
	}
	if l.Seal(t0) != nil {
		t.Fatal("second Seal returned usage")
	}
	if u := newLimiter(t, 5, iv).Seal(t0); len(u) != 0 {
		t.Fatalf("Seal of a full limiter = %v", u)
	}
}

func TestInherit(t *testing.T) {
	const iv = 10 * time.Millisecond
	l := newLimiter(t, 5, iv)
	// 2 units, natural expiry at +20ms, but held until +100ms.
	l.Inherit(t0, []spi.Usage{{Units: 2, Until: at(100 * time.Millisecond)}, {Units: 1, Until: t0}})
	wantSnapshot(t, l, t0, 5, 3, 2)
	wantSnapshot(t, l, at(50*time.Millisecond), 5, 2, 3)
	wantRefuseUntil(t, l.TryAcquire(at(50*time.Millisecond), 4), at(100*time.Millisecond))
	if d := l.TryAcquire(at(100*time.Millisecond-1), 4); d.Granted {
		t.Fatal("barrier released early")
	}
	wantSnapshot(t, l, at(100*time.Millisecond), 5, 0, 5)
	if d := l.TryAcquire(at(100*time.Millisecond), 5); !d.Granted {
		t.Fatalf("refused after the barrier: %+v", d)
	}

	// Seal hands the barrier over again, apart from the own debt.
	m := newLimiter(t, 5, iv)
	m.Inherit(t0, []spi.Usage{{Units: 1, Until: at(time.Second)}})
	m.TryAcquire(t0, 2) // TAT = +30ms
	got := m.Seal(t0)
	if len(got) != 2 || got[0].Units != 2 || !got[0].Until.Equal(at(30*time.Millisecond)) ||
		got[1].Units != 1 || !got[1].Until.Equal(at(time.Second)) {
		t.Fatalf("Seal = %v", got)
	}

	// Handover between two GCRA limiters keeps the debt.
	a, b := newLimiter(t, 4, iv), newLimiter(t, 4, time.Second)
	a.TryAcquire(t0, 4)
	b.Inherit(t0, a.Seal(t0))
	wantSnapshot(t, b, t0, 4, 4, 0)
	wantSnapshot(t, b, at(40*time.Millisecond), 4, 4, 0)
	wantSnapshot(t, b, at(time.Second), 4, 3, 1)
}

func TestInheritNegativePanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("no panic")
		}
	}()
	newLimiter(t, 1, time.Second).Inherit(t0, []spi.Usage{{Units: -1}})
}

// TestConcurrentNeverAboveBurst hammers one limiter at a fixed instant.
func TestConcurrentNeverAboveBurst(t *testing.T) {
	l := newLimiter(t, 100, time.Second)
	var granted atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				if l.TryAcquire(t0, 1).Granted {
					granted.Add(1)
				}
				l.Snapshot(t0)
			}
		})
	}
	wg.Wait()
	if granted.Load() != 100 {
		t.Fatalf("granted %d, want 100", granted.Load())
	}
}

// TestOutOfOrder: a caller with an earlier now never gets more.
func TestOutOfOrder(t *testing.T) {
	const iv = 10 * time.Millisecond
	l := newLimiter(t, 2, iv)
	l.TryAcquire(at(time.Second), 2)
	if d := l.TryAcquire(at(time.Second-time.Millisecond), 1); d.Granted {
		t.Fatal("late caller granted")
	}
}
