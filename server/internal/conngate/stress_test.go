package conngate_test

import (
	"math/rand/v2"
	"net/netip"
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
	type slotModel struct {
		admitted, conn, hs bool
		key                int // index in keys of the source; -1 for none
	}
	// Addresses to admit from (some share a source key) and their keys.
	addrs := []string{"", addrA, addrA6, addrB, addrB2, "10.1.2.3"}
	addrKey := []int{-1, 0, 0, 1, 1, 2}
	rapid.Check(t, func(t *rapid.T) {
		limits := func(label string) conngate.Limits {
			c := rapid.IntRange(1, 6).Draw(t, label+"Conns")
			h := rapid.IntRange(0, c).Draw(t, label+"Handshakes")
			maxPer := h
			if h == 0 {
				maxPer = c
			}
			return conngate.Limits{MaxConnections: c, MaxHandshakes: h, MaxHandshakesPerAddress: rapid.IntRange(0, maxPer).Draw(t, label+"PerAddress")}
		}
		l := limits("initial")
		g, err := conngate.New(l)
		if err != nil {
			t.Fatal(err)
		}
		slots := make([]conngate.Slot, 8)
		model := make([]slotModel, len(slots))
		var conns, hss int
		var perKey [3]int
		var admitted, rejC, rejH, rejA uint64
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
				maxA := l.MaxHandshakesPerAddress
				if maxA == 0 {
					maxA = maxH
				}
				a := rapid.IntRange(0, len(addrs)-1).Draw(t, "addr")
				k := addrKey[a]
				switch {
				case conns >= l.MaxConnections:
					want, rejC = conngate.ReasonConnectionLimit, rejC+1
				case hss >= maxH:
					want, rejH = conngate.ReasonHandshakeLimit, rejH+1
				case k >= 0 && perKey[k] >= maxA:
					want, rejA = conngate.ReasonHandshakePerAddress, rejA+1
				default:
					admitted++
					conns++
					hss++
					if k >= 0 {
						perKey[k]++
					}
					*m = slotModel{admitted: true, conn: true, hs: true, key: k}
				}
				var got conngate.Reason
				if addrs[a] == "" && rapid.Bool().Draw(t, "plainAdmit") {
					got = slots[i].Admit(g)
				} else {
					var addr netip.Addr
					if addrs[a] != "" {
						addr = netip.MustParseAddr(addrs[a])
					}
					got = slots[i].AdmitFrom(g, addr)
				}
				if got != want {
					t.Fatalf("step %d admit %d from %q: %v, model %v", step, i, addrs[a], got, want)
				}
			case 1:
				want := m.hs
				if want {
					hss--
					if m.key >= 0 {
						perKey[m.key]--
					}
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
					if m.key >= 0 {
						perKey[m.key]--
					}
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
			entries := 0
			for k, n := range perKey {
				if n > 0 {
					entries++
				}
				if got := g.AddressHandshakes(netip.MustParseAddr(addrs[1+2*k])); got != n {
					t.Fatalf("step %d: %d handshakes from %s, model %d", step, got, addrs[1+2*k], n)
				}
			}
			want := conngate.Stats{Connections: conns, Handshakes: hss, HandshakeAddresses: entries, Admitted: admitted,
				RejectedConnectionLimit: rejC, RejectedHandshakeLimit: rejH, RejectedHandshakePerAddress: rejA}
			if got := g.Stats(); got != want {
				t.Fatalf("step %d: stats %+v, model %+v", step, got, want)
			}
		}
	})
}

// churnAddrs are the sources of the stress tests' connections: four source
// keys (the second and third written two ways) and no address.
var churnAddrs = []netip.Addr{
	netip.MustParseAddr("127.0.0.2"),
	netip.MustParseAddr("::ffff:127.0.0.2"),
	netip.MustParseAddr("127.0.0.3"),
	netip.MustParseAddr("2001:db8:1:2::1"),
	netip.MustParseAddr("2001:db8:1:2::2"),
	netip.MustParseAddr("2001:db8:1:3::1"),
	{},
}

// churnKeys are the source keys of churnAddrs, one address each.
var churnKeys = []netip.Addr{churnAddrs[0], churnAddrs[2], churnAddrs[3], churnAddrs[5]}

// TestChurn pushes 2,000 connections through a small gate from several
// goroutines, from four source addresses and from none. Each goroutine holds a random batch of admitted connections
// and finishes them in random order: Ready then cleanup, cleanup only, a
// late Ready after cleanup, or the Ready transition and the terminal
// cleanup racing on two goroutines. A refused connection is retried after
// one held connection is finished.
func TestChurn(t *testing.T) {
	const total, workers = 2000, 8
	lim := conngate.Limits{MaxConnections: 40, MaxHandshakes: 24, MaxHandshakesPerAddress: 5}
	g, err := conngate.New(lim)
	require.NoError(t, err)
	slots := make([]conngate.Slot, total)
	var next atomic.Int64
	var violations, releases, dones atomic.Int64
	check := func() {
		if s := g.Stats(); s.Connections > lim.MaxConnections || s.Handshakes > lim.MaxHandshakes || s.Handshakes > s.Connections ||
			s.HandshakeAddresses > len(churnKeys) {
			violations.Add(1)
		}
		for _, k := range churnKeys {
			if n := g.AddressHandshakes(k); n > lim.MaxHandshakesPerAddress || n < 0 {
				violations.Add(1)
			}
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
				for s.AdmitFrom(g, churnAddrs[i%len(churnAddrs)]) != conngate.ReasonNone {
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
	assert.Zero(t, st.HandshakeAddresses, "per-address entries left")
	for _, k := range churnKeys {
		assert.Zero(t, g.AddressHandshakes(k), k)
	}
	assert.Equal(t, uint64(total), st.Admitted)
	t.Logf("handshakes done %d, rejected connection_limit %d, handshake_limit %d, handshake_per_address %d",
		dones.Load(), st.RejectedConnectionLimit, st.RejectedHandshakeLimit, st.RejectedHandshakePerAddress)
}

// TestStressWithLimitChanges admits and releases on several goroutines,
// from four source addresses and from none, while another changes the
// limits; the counts (per address too) never exceed the largest bounds set
// and end at zero, with no per-address entry left.
func TestStressWithLimitChanges(t *testing.T) {
	limits := []conngate.Limits{
		{MaxConnections: 8, MaxHandshakes: 2},
		{MaxConnections: 2, MaxHandshakes: 0, MaxHandshakesPerAddress: 1},
		{MaxConnections: 16, MaxHandshakes: 16, MaxHandshakesPerAddress: 3},
		{MaxConnections: 1, MaxHandshakes: 1},
		{MaxConnections: 12, MaxHandshakes: 4, MaxHandshakesPerAddress: 4},
		{MaxConnections: 16, MaxHandshakes: 12, MaxHandshakesPerAddress: 2},
	}
	const maxConns, maxHandshakes, maxPerAddress = 16, 16, 4
	g, err := conngate.New(limits[0])
	require.NoError(t, err)
	var stop atomic.Bool
	var violations, admits atomic.Int64
	check := func() {
		if s := g.Stats(); s.Connections > maxConns || s.Handshakes > maxHandshakes || s.Connections < 0 || s.Handshakes < 0 {
			violations.Add(1)
		}
		for _, k := range churnKeys {
			if n := g.AddressHandshakes(k); n > maxPerAddress || n < 0 {
				violations.Add(1)
			}
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
					if s.AdmitFrom(g, churnAddrs[rng.IntN(len(churnAddrs))]) == conngate.ReasonNone {
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
	assert.Zero(t, st.HandshakeAddresses, "per-address entries left")
	for _, k := range churnKeys {
		assert.Zero(t, g.AddressHandshakes(k), k)
	}
	assert.Equal(t, uint64(admits.Load()), st.Admitted)
	t.Logf("admitted %d, rejected connection_limit %d, handshake_limit %d, handshake_per_address %d",
		st.Admitted, st.RejectedConnectionLimit, st.RejectedHandshakeLimit, st.RejectedHandshakePerAddress)
}
