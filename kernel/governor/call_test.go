package governor_test

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sluicerpc/sluice/kernel/governor"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCapacityLevelString(t *testing.T) {
	for _, tt := range []struct {
		l    governor.CapacityLevel
		want string
	}{
		{governor.LevelNone, "none"},
		{governor.LevelConnection, "connection"},
		{governor.LevelServer, "server"},
		{governor.CapacityLevel(9), "CapacityLevel(9)"},
	} {
		assert.Equal(t, tt.want, tt.l.String())
	}
	assert.Equal(t, "call_capacity", governor.CallCapacityReason)
}

func TestCallReserveTwoLevels(t *testing.T) {
	tests := []struct {
		name                string
		connCap, serverCap  int // 0 = nil level
		connUsed, srvUsed   int // reservations taken beforehand
		wantOK              bool
		wantLevel           governor.CapacityLevel
		wantConn, wantSrvRs int // reserved after Reserve
	}{
		{"both free", 2, 2, 0, 0, true, governor.LevelNone, 1, 1},
		{"connection full", 1, 2, 1, 0, false, governor.LevelConnection, 1, 0},
		{"server full undoes connection", 2, 1, 0, 1, false, governor.LevelServer, 0, 1},
		{"both full reports connection", 1, 1, 1, 1, false, governor.LevelConnection, 1, 1},
		{"nil connection", 0, 1, 0, 0, true, governor.LevelNone, 0, 1},
		{"nil connection server full", 0, 1, 0, 1, false, governor.LevelServer, 0, 1},
		{"nil server", 1, 0, 0, 0, true, governor.LevelNone, 1, 0},
		{"nil server connection full", 1, 0, 1, 0, false, governor.LevelConnection, 1, 0},
		{"both nil", 0, 0, 0, 0, true, governor.LevelNone, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var conn, srv *governor.CallCapacity
			if tt.connCap > 0 {
				conn = governor.NewCallCapacity(tt.connCap)
				for range tt.connUsed {
					require.True(t, conn.TryReserve())
				}
			}
			if tt.serverCap > 0 {
				srv = governor.NewCallCapacity(tt.serverCap)
				for range tt.srvUsed {
					require.True(t, srv.TryReserve())
				}
			}
			var c governor.Call
			ok, level := c.Reserve(conn, srv)
			assert.Equal(t, tt.wantOK, ok)
			assert.Equal(t, tt.wantLevel, level)
			if conn != nil {
				assert.Equal(t, snap(tt.connCap, 0, tt.wantConn), conn.Snapshot())
			}
			if srv != nil {
				assert.Equal(t, snap(tt.serverCap, 0, tt.wantSrvRs), srv.Snapshot())
			}
			if !ok {
				// A refused Call stays fresh: Release does nothing, Reserve may retry.
				assert.False(t, c.Release())
				assert.PanicsWithValue(t, "governor: Activate without a reservation", func() { c.Activate() })
				return
			}
			require.True(t, c.Activate())
			require.True(t, c.Release())
			if conn != nil {
				assert.Equal(t, snap(tt.connCap, 0, tt.connUsed), conn.Snapshot())
			}
			if srv != nil {
				assert.Equal(t, snap(tt.serverCap, 0, tt.srvUsed), srv.Snapshot())
			}
		})
	}
}

func TestCallLifecycle(t *testing.T) {
	tests := []struct {
		name     string
		activate bool
	}{
		{"release reserved", false},
		{"release active", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			conn, srv := governor.NewCallCapacity(1), governor.NewCallCapacity(1)
			var c governor.Call
			ok, _ := c.Reserve(conn, srv)
			require.True(t, ok)
			assert.Equal(t, snap(1, 0, 1), conn.Snapshot())
			assert.Equal(t, snap(1, 0, 1), srv.Snapshot())
			if tt.activate {
				require.True(t, c.Activate())
				assert.Equal(t, snap(1, 1, 0), conn.Snapshot())
				assert.Equal(t, snap(1, 1, 0), srv.Snapshot())
			}
			require.True(t, c.Release())
			assert.Equal(t, snap(1, 0, 0), conn.Snapshot())
			assert.Equal(t, snap(1, 0, 0), srv.Snapshot())

			// Exactly once: later releases return false and never underflow.
			for range 3 {
				assert.False(t, c.Release())
			}
			assert.Equal(t, snap(1, 0, 0), conn.Snapshot())
			assert.Equal(t, snap(1, 0, 0), srv.Snapshot())
			// Activate after release does nothing.
			assert.False(t, c.Activate())
			assert.Equal(t, snap(1, 0, 0), conn.Snapshot())

			// Reset makes it reusable.
			c.Reset()
			ok, _ = c.Reserve(conn, srv)
			require.True(t, ok)
			require.True(t, c.Release())
			assert.Equal(t, snap(1, 0, 0), conn.Snapshot())
		})
	}
}

func TestCallMisusePanics(t *testing.T) {
	newReserved := func() *governor.Call {
		c := new(governor.Call)
		ok, _ := c.Reserve(governor.NewCallCapacity(1), nil)
		require.True(t, ok)
		return c
	}
	tests := []struct {
		name string
		msg  string
		f    func()
	}{
		{"activate fresh", "governor: Activate without a reservation", func() { new(governor.Call).Activate() }},
		{"activate twice", "governor: Call.Activate on a Call in state active (Activate called twice)", func() {
			c := newReserved()
			c.Activate()
			c.Activate()
		}},
		{"reserve reserved", "governor: Call.Reserve on a Call in state reserved (Reset a released Call before reuse)", func() {
			newReserved().Reserve(nil, nil)
		}},
		{"reserve released", "governor: Call.Reserve on a Call in state released (Reset a released Call before reuse)", func() {
			c := newReserved()
			c.Release()
			c.Reserve(nil, nil)
		}},
		{"reset reserved", "governor: Call.Reset of a Call in state reserved (Release it first)", func() { newReserved().Reset() }},
		{"reset active", "governor: Call.Reset of a Call in state active (Release it first)", func() {
			c := newReserved()
			c.Activate()
			c.Reset()
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.PanicsWithValue(t, tt.msg, tt.f)
		})
	}
	// Reset of a fresh Call is allowed.
	assert.NotPanics(t, func() { new(governor.Call).Reset() })
}

func TestCallConcurrentReleaseExactlyOnce(t *testing.T) {
	const goroutines, rounds = 16, 200
	conn, srv := governor.NewCallCapacity(1), governor.NewCallCapacity(1)
	for round := range rounds {
		var c governor.Call
		ok, _ := c.Reserve(conn, srv)
		require.True(t, ok)
		if round%2 == 1 {
			require.True(t, c.Activate())
		}
		var wins atomic.Int32
		var start, done sync.WaitGroup
		start.Add(1)
		for range goroutines {
			done.Go(func() {
				start.Wait()
				if c.Release() {
					wins.Add(1)
				}
			})
		}
		start.Done()
		done.Wait()
		require.Equal(t, int32(1), wins.Load(), "round %d", round)
		require.Equal(t, snap(1, 0, 0), conn.Snapshot())
		require.Equal(t, snap(1, 0, 0), srv.Snapshot())
	}
}

// TestCallReleaseRacingActivate races a Release (a cancellation) with the
// owner's Activate: whichever wins (Activate first, Release during
// activation, or Release first), the Release returns true, the capacity is
// returned exactly once, and the counters end at zero.
func TestCallReleaseRacingActivate(t *testing.T) {
	conn, srv := governor.NewCallCapacity(1), governor.NewCallCapacity(1)
	var activated, refused int
	for range 2000 {
		var c governor.Call
		ok, _ := c.Reserve(conn, srv)
		require.True(t, ok)
		var released atomic.Bool
		var wg sync.WaitGroup
		wg.Go(func() { released.Store(c.Release()) })
		if c.Activate() {
			activated++
		} else {
			refused++
		}
		wg.Wait()
		require.True(t, released.Load(), "the only Release must win")
		require.False(t, c.Release())
		require.Equal(t, snap(1, 0, 0), conn.Snapshot())
		require.Equal(t, snap(1, 0, 0), srv.Snapshot())
	}
	t.Logf("activate won %d, release won first %d", activated, refused)
}

// TestCallStress runs Reserve/Activate/Release on shared connection and
// server capacities while another goroutine resizes both. Every grant is
// checked through the word: a snapshot taken after a grant never shows
// more usage than the largest capacity ever set, and everything ends at
// zero.
func TestCallStress(t *testing.T) {
	const workers, iters = 8, 3000
	sizes := []int{1, 3, 8, 2, 5}
	maxSize := 8
	conn, srv := governor.NewCallCapacity(4), governor.NewCallCapacity(6)
	var stop atomic.Bool
	var violations, grants, refusals atomic.Int64
	check := func(s governor.CallCapacitySnapshot) {
		if s.Active+s.Reserved > maxSize || s.Active < 0 || s.Reserved < 0 {
			violations.Add(1)
		}
	}
	var resizer sync.WaitGroup
	resizer.Go(func() {
		for i := 0; !stop.Load(); i++ {
			conn.SetCapacity(sizes[i%len(sizes)])
			srv.SetCapacity(sizes[(i+2)%len(sizes)])
			runtime.Gosched()
		}
	})
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			var c governor.Call
			for i := range iters {
				ok, level := c.Reserve(conn, srv)
				if !ok {
					refusals.Add(1)
					if level != governor.LevelConnection && level != governor.LevelServer {
						violations.Add(1)
					}
					continue
				}
				grants.Add(1)
				check(conn.Snapshot())
				check(srv.Snapshot())
				if (i+w)%3 != 0 {
					if !c.Activate() {
						violations.Add(1)
					}
					check(conn.Snapshot())
					check(srv.Snapshot())
				}
				if !c.Release() || c.Release() {
					violations.Add(1)
				}
				c.Reset()
			}
		})
	}
	wg.Wait()
	stop.Store(true)
	resizer.Wait()
	assert.Zero(t, violations.Load())
	assert.Positive(t, grants.Load())
	c, s := conn.Snapshot(), srv.Snapshot()
	assert.Zero(t, c.Active+c.Reserved)
	assert.Zero(t, s.Active+s.Reserved)
	t.Logf("grants %d, refusals %d", grants.Load(), refusals.Load())
}

func TestCallAllocatesNothing(t *testing.T) {
	conn, srv := governor.NewCallCapacity(4), governor.NewCallCapacity(4)
	var c governor.Call
	allocs := testing.AllocsPerRun(1000, func() {
		c.Reserve(conn, srv)
		c.Activate()
		c.Release()
		c.Reset()
	})
	assert.Zero(t, allocs)
}

func BenchmarkCall(b *testing.B) {
	conn, srv := governor.NewCallCapacity(64), governor.NewCallCapacity(1024)
	var c governor.Call
	b.ReportAllocs()
	for b.Loop() {
		if ok, _ := c.Reserve(conn, srv); !ok {
			b.Fatal("refused")
		}
		c.Activate()
		c.Release()
		c.Reset()
	}
}

func BenchmarkCallParallel(b *testing.B) {
	srv := governor.NewCallCapacity(governor.MaxCallCapacity)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		conn := governor.NewCallCapacity(64)
		var c governor.Call
		for pb.Next() {
			if ok, _ := c.Reserve(conn, srv); !ok {
				panic("refused")
			}
			c.Activate()
			c.Release()
			c.Reset()
		}
	})
}
