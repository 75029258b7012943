package conngate_test

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/sluicerpc/sluice/server/internal/conngate"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

// TestSlotMatchesModel drives a Gate and its Slots with random operations
// and compares every outcome and count with a simple model.
func TestSlotMatchesModel(t *testing.T) {
	type slotModel struct{ admitted, conn, hs bool }
	rapid.Check(t, func(t *rapid.T) {
		limits := func(label string) conngate.Limits {
			c := rapid.IntRange(1, 6).Draw(t, label+"Conns")
			return conngate.Limits{MaxConnections: c, MaxHandshakes: rapid.IntRange(0, c).Draw(t, label+"Handshakes")}
		}
		l := limits("initial")
		g, err := conngate.New(l)
		if err != nil {
			t.Fatal(err)
		}
		slots := make([]conngate.Slot, 8)
		model := make([]slotModel, len(slots))
		var conns, hss int
		var admitted, rejC, rejH uint64
		for step, n := 0, rapid.IntRange(1, 150).Draw(t, "steps"); step < n; step++ {
			i := rapid.IntRange(0, len(slots)-1).Draw(t, "slot")
			m := &model[i]
			switch rapid.IntRange(0, 3).Draw(t, "op") {
			case 0:
				if m.admitted {
					if m.conn || m.hs {
						continue
					}
					slots[i].Reset()
					*m = slotModel{}
				}
				want := conngate.ReasonNone
				maxH := l.MaxHandshakes
				if maxH == 0 {
					maxH = l.MaxConnections
				}
				switch {
				case conns >= l.MaxConnections:
					want, rejC = conngate.ReasonConnectionLimit, rejC+1
				case hss >= maxH:
					want, rejH = conngate.ReasonHandshakeLimit, rejH+1
				default:
					admitted++
					conns++
					hss++
					*m = slotModel{admitted: true, conn: true, hs: true}
				}
				if got := slots[i].Admit(g); got != want {
					t.Fatalf("step %d admit %d: %v, model %v", step, i, got, want)
				}
			case 1:
				want := m.hs
				if want {
					hss--
					m.hs = false
				}
				if got := slots[i].HandshakeDone(); got != want {
					t.Fatalf("step %d done %d: %v, model %v", step, i, got, want)
				}
			case 2:
				want := m.conn || m.hs
				if m.conn {
					conns--
				}
				if m.hs {
					hss--
				}
				m.conn, m.hs = false, false
				if got := slots[i].Release(); got != want {
					t.Fatalf("step %d release %d: %v, model %v", step, i, got, want)
				}
			case 3:
				l = limits("new")
				if err := g.SetLimits(l); err != nil {
					t.Fatal(err)
				}
			}
			want := conngate.Stats{Connections: conns, Handshakes: hss, Admitted: admitted, RejectedConnectionLimit: rejC, RejectedHandshakeLimit: rejH}
			if got := g.Stats(); got != want {
				t.Fatalf("step %d: stats %+v, model %+v", step, got, want)
			}
		}
	})
}

// TestChurn pushes 2,000 connections through a small gate from several
// goroutines. Each goroutine holds a random batch of admitted connections
// and finishes them in random order: Ready then cleanup, cleanup only, a
// late Ready after cleanup, or the Ready transition and the terminal
// cleanup racing on two goroutines. A refused connection is retried after
// one held connection is finished.
func TestChurn(t *testing.T) {
	const total, workers = 2000, 8
	lim := conngate.Limits{MaxConnections: 40, MaxHandshakes: 24}
	g, err := conngate.New(lim)
	require.NoError(t, err)
	slots := make([]conngate.Slot, total)
	var next atomic.Int64
	var violations, releases, dones atomic.Int64
	check := func() {
		if s := g.Stats(); s.Connections > lim.MaxConnections || s.Handshakes > lim.MaxHandshakes || s.Handshakes > s.Connections {
			violations.Add(1)
		}
	}
	finish := func(rng *rand.Rand, s *conngate.Slot) {
		switch rng.IntN(4) {
		case 0: // Ready, then cleanup
			if s.HandshakeDone() {
				dones.Add(1)
			}
			if s.Release() {
				releases.Add(1)
			}
		case 1: // failed handshake: cleanup only
			if s.Release() {
				releases.Add(1)
			}
		case 2: // cleanup, then a late Ready
			if s.Release() {
				releases.Add(1)
			}
			if s.HandshakeDone() {
				violations.Add(1)
			}
		case 3: // Ready and cleanup race on two goroutines
			var inner sync.WaitGroup
			inner.Go(func() {
				if s.HandshakeDone() {
					dones.Add(1)
				}
			})
			if s.Release() {
				releases.Add(1)
			}
			inner.Wait()
		}
		check()
		if s.Release() || s.HandshakeDone() {
			violations.Add(1) // everything was already returned
		}
	}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 42))
			var held []*conngate.Slot
			finishOne := func() {
				k := rng.IntN(len(held))
				finish(rng, held[k])
				held[k] = held[len(held)-1]
				held = held[:len(held)-1]
			}
			for {
				i := int(next.Add(1)) - 1
				if i >= total {
					break
				}
				s := &slots[i]
				for s.Admit(g) != conngate.ReasonNone {
					if len(held) > 0 {
						finishOne()
					} else {
						runtime.Gosched()
					}
				}
				check()
				held = append(held, s)
				// Some connections finish their handshake early and stay
				// held as Ready connections.
				if rng.IntN(2) == 0 && s.HandshakeDone() {
					dones.Add(1)
				}
				if len(held) > rng.IntN(24) {
					finishOne()
				}
			}
			for len(held) > 0 {
				finishOne()
			}
		})
	}
	wg.Wait()
	st := g.Stats()
	assert.Zero(t, violations.Load())
	assert.Equal(t, int64(total), releases.Load(), "every connection released exactly once")
	assert.Zero(t, st.Connections)
	assert.Zero(t, st.Handshakes)
	assert.Equal(t, uint64(total), st.Admitted)
	t.Logf("handshakes done %d, rejected connection_limit %d, handshake_limit %d",
		dones.Load(), st.RejectedConnectionLimit, st.RejectedHandshakeLimit)
}

// TestStressWithLimitChanges admits and releases on several goroutines
// while another changes the limits; the counts never exceed the largest
// bounds set and end at zero.
func TestStressWithLimitChanges(t *testing.T) {
	limits := []conngate.Limits{
		{MaxConnections: 8, MaxHandshakes: 2},
		{MaxConnections: 2, MaxHandshakes: 0},
		{MaxConnections: 16, MaxHandshakes: 16},
		{MaxConnections: 1, MaxHandshakes: 1},
		{MaxConnections: 12, MaxHandshakes: 4},
	}
	const maxConns, maxHandshakes = 16, 16
	g, err := conngate.New(limits[0])
	require.NoError(t, err)
	var stop atomic.Bool
	var violations, admits atomic.Int64
	check := func() {
		if s := g.Stats(); s.Connections > maxConns || s.Handshakes > maxHandshakes || s.Connections < 0 || s.Handshakes < 0 {
			violations.Add(1)
		}
	}
	var changer sync.WaitGroup
	changer.Go(func() {
		for i := 0; !stop.Load(); i++ {
			if err := g.SetLimits(limits[i%len(limits)]); err != nil {
				violations.Add(1)
			}
			check()
			runtime.Gosched()
		}
	})
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			held := make([]conngate.Slot, 4)
			for range 3000 {
				s := &held[rng.IntN(len(held))]
				switch rng.IntN(3) {
				case 0:
					if s.Release() {
						s.Reset()
					}
					if s.Admit(g) == conngate.ReasonNone {
						admits.Add(1)
					}
				case 1:
					s.HandshakeDone()
				case 2:
					if s.Release() {
						s.Reset()
					}
				}
				check()
			}
			for i := range held {
				held[i].Release()
			}
		})
	}
	wg.Wait()
	stop.Store(true)
	changer.Wait()
	st := g.Stats()
	assert.Zero(t, violations.Load())
	assert.Positive(t, admits.Load())
	assert.Zero(t, st.Connections)
	assert.Zero(t, st.Handshakes)
	assert.Equal(t, uint64(admits.Load()), st.Admitted)
	t.Logf("admitted %d, rejected connection_limit %d, handshake_limit %d", st.Admitted, st.RejectedConnectionLimit, st.RejectedHandshakeLimit)
}
