package conngate_test

import (
	"net/netip"
	"testing"

	"github.com/sluicerpc/sluice/server/internal/conngate"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// addrOp is one step of a per-address script: admit slot i from addr (""
// for no address), finish its handshake, release it, or change the
// limits; then the handshakes of a and b (as source keys) and the number
// of table entries.
type addrOp struct {
	op     string // "admit", "done", "release", "limits"
	slot   int
	addr   string
	limits conngate.Limits
	want   any    // Reason for admit, bool for done/release
	hs     [2]int // handshakes from a and b
	total  [3]int // connections, handshakes, table entries
}

const (
	addrA  = "127.0.0.2"
	addrA6 = "::ffff:127.0.0.2" // the same source as addrA
	addrB  = "2001:db8:1:2::1"
	addrB2 = "2001:db8:1:2::ffff" // the same /64 as addrB
)

func TestPerAddressScripts(t *testing.T) {
	const (
		none = conngate.ReasonNone
		conn = conngate.ReasonConnectionLimit
		hs   = conngate.ReasonHandshakeLimit
		per  = conngate.ReasonHandshakePerAddress
	)
	lim := func(c, h, a int) conngate.Limits {
		return conngate.Limits{MaxConnections: c, MaxHandshakes: h, MaxHandshakesPerAddress: a}
	}
	tests := []struct {
		name    string
		limits  conngate.Limits
		script  []addrOp
		wantRej [4]uint64 // by Reason
	}{
		{"one address holds at most its bound; another is admitted", lim(10, 6, 2), []addrOp{
			{op: "admit", slot: 0, addr: addrA, want: none, hs: [2]int{1, 0}, total: [3]int{1, 1, 1}},
			{op: "admit", slot: 1, addr: addrA6, want: none, hs: [2]int{2, 0}, total: [3]int{2, 2, 1}},
			{op: "admit", slot: 2, addr: addrA, want: per, hs: [2]int{2, 0}, total: [3]int{2, 2, 1}},
			{op: "admit", slot: 2, addr: addrB, want: none, hs: [2]int{2, 1}, total: [3]int{3, 3, 2}},
			{op: "admit", slot: 3, addr: addrB2, want: none, hs: [2]int{2, 2}, total: [3]int{4, 4, 2}},
			{op: "admit", slot: 4, addr: addrB, want: per, hs: [2]int{2, 2}, total: [3]int{4, 4, 2}},
			{op: "admit", slot: 4, addr: "", want: none, hs: [2]int{2, 2}, total: [3]int{5, 5, 2}},
			// The handshake done frees a per-address handshake too.
			{op: "done", slot: 0, want: true, hs: [2]int{1, 2}, total: [3]int{5, 4, 2}},
			{op: "admit", slot: 5, addr: addrA, want: none, hs: [2]int{2, 2}, total: [3]int{6, 5, 2}},
			// Release after done returns the connection only.
			{op: "release", slot: 0, want: true, hs: [2]int{2, 2}, total: [3]int{5, 5, 2}},
			// Release in handshake returns the address's handshake.
			{op: "release", slot: 1, want: true, hs: [2]int{1, 2}, total: [3]int{4, 4, 2}},
			{op: "release", slot: 5, want: true, hs: [2]int{0, 2}, total: [3]int{3, 3, 1}},
			{op: "release", slot: 5, want: false, hs: [2]int{0, 2}, total: [3]int{3, 3, 1}},
			{op: "done", slot: 2, want: true, hs: [2]int{0, 1}, total: [3]int{3, 2, 1}},
			{op: "done", slot: 3, want: true, hs: [2]int{0, 0}, total: [3]int{3, 1, 0}},
			{op: "release", slot: 4, want: true, hs: [2]int{0, 0}, total: [3]int{2, 0, 0}},
		}, [4]uint64{per: 2}},
		{"server-wide bounds are reported first", lim(3, 2, 1), []addrOp{
			{op: "admit", slot: 0, addr: addrA, want: none, hs: [2]int{1, 0}, total: [3]int{1, 1, 1}},
			{op: "admit", slot: 1, addr: addrB, want: none, hs: [2]int{1, 1}, total: [3]int{2, 2, 2}},
			{op: "admit", slot: 2, addr: addrA, want: hs, hs: [2]int{1, 1}, total: [3]int{2, 2, 2}},
			{op: "done", slot: 1, want: true, hs: [2]int{1, 0}, total: [3]int{2, 1, 1}},
			{op: "admit", slot: 2, addr: addrA, want: per, hs: [2]int{1, 0}, total: [3]int{2, 1, 1}},
			{op: "admit", slot: 2, addr: addrB, want: none, hs: [2]int{1, 1}, total: [3]int{3, 2, 2}},
			{op: "admit", slot: 3, addr: addrA, want: conn, hs: [2]int{1, 1}, total: [3]int{3, 2, 2}},
		}, [4]uint64{conn: 1, hs: 1, per: 1}},
		{"limit changes: a slot gives back what it took", lim(10, 4, 0), []addrOp{
			// Per-address bound 0: bounded by MaxHandshakes, still counted.
			{op: "admit", slot: 0, addr: addrA, want: none, hs: [2]int{1, 0}, total: [3]int{1, 1, 1}},
			{op: "admit", slot: 1, addr: addrA, want: none, hs: [2]int{2, 0}, total: [3]int{2, 2, 1}},
			{op: "admit", slot: 2, addr: addrA, want: none, hs: [2]int{3, 0}, total: [3]int{3, 3, 1}},
			{op: "admit", slot: 3, addr: "", want: none, hs: [2]int{3, 0}, total: [3]int{4, 4, 1}},
			// Lowered under what is held: closes nothing, refuses new ones.
			{op: "limits", limits: lim(10, 4, 1), hs: [2]int{3, 0}, total: [3]int{4, 4, 1}},
			{op: "done", slot: 3, want: true, hs: [2]int{3, 0}, total: [3]int{4, 3, 1}},
			{op: "admit", slot: 4, addr: addrA, want: per, hs: [2]int{3, 0}, total: [3]int{4, 3, 1}},
			{op: "admit", slot: 4, addr: addrB, want: none, hs: [2]int{3, 1}, total: [3]int{5, 4, 2}},
			{op: "release", slot: 0, want: true, hs: [2]int{2, 1}, total: [3]int{4, 3, 2}},
			{op: "done", slot: 1, want: true, hs: [2]int{1, 1}, total: [3]int{4, 2, 2}},
			{op: "admit", slot: 5, addr: addrA, want: per, hs: [2]int{1, 1}, total: [3]int{4, 2, 2}},
			// Raised: exactly the difference is admitted.
			{op: "limits", limits: lim(10, 4, 2), hs: [2]int{1, 1}, total: [3]int{4, 2, 2}},
			{op: "admit", slot: 5, addr: addrA6, want: none, hs: [2]int{2, 1}, total: [3]int{5, 3, 2}},
			{op: "release", slot: 2, want: true, hs: [2]int{1, 1}, total: [3]int{4, 2, 2}},
			{op: "release", slot: 5, want: true, hs: [2]int{0, 1}, total: [3]int{3, 1, 1}},
			{op: "release", slot: 4, want: true, hs: [2]int{0, 0}, total: [3]int{2, 0, 0}},
			{op: "release", slot: 1, want: true, hs: [2]int{0, 0}, total: [3]int{1, 0, 0}},
			{op: "release", slot: 3, want: true, hs: [2]int{0, 0}, total: [3]int{0, 0, 0}},
		}, [4]uint64{per: 2}},
	}
	a, b := netip.MustParseAddr(addrA), netip.MustParseAddr(addrB)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g, err := conngate.New(tt.limits)
			require.NoError(t, err)
			slots := make([]conngate.Slot, 6)
			for i, s := range tt.script {
				switch s.op {
				case "admit":
					var addr netip.Addr
					if s.addr != "" {
						addr = netip.MustParseAddr(s.addr)
					}
					assert.Equal(t, s.want, slots[s.slot].AdmitFrom(g, addr), "step %d admit %d", i, s.slot)
				case "done":
					assert.Equal(t, s.want, slots[s.slot].HandshakeDone(), "step %d done %d", i, s.slot)
				case "release":
					assert.Equal(t, s.want, slots[s.slot].Release(), "step %d release %d", i, s.slot)
				case "limits":
					require.NoError(t, g.SetLimits(s.limits), "step %d", i)
				}
				st := g.Stats()
				assert.Equal(t, s.hs, [2]int{g.AddressHandshakes(a), g.AddressHandshakes(b)}, "step %d %s %d: per address", i, s.op, s.slot)
				assert.Equal(t, s.total, [3]int{st.Connections, st.Handshakes, st.HandshakeAddresses}, "step %d %s %d: totals", i, s.op, s.slot)
			}
			st := g.Stats()
			assert.Equal(t, tt.wantRej, [4]uint64{0, st.RejectedConnectionLimit, st.RejectedHandshakeLimit, st.RejectedHandshakePerAddress})
		})
	}
}

func TestAdmitFromAllocatesNothing(t *testing.T) {
	g := newGate(t, 8, 4)
	require.NoError(t, g.SetLimits(conngate.Limits{MaxConnections: 8, MaxHandshakes: 4, MaxHandshakesPerAddress: 1}))
	a, b := netip.MustParseAddr(addrA), netip.MustParseAddr(addrB)
	var holder, s, refused conngate.Slot
	require.Equal(t, conngate.ReasonNone, holder.AdmitFrom(g, b))
	allocs := testing.AllocsPerRun(1000, func() {
		s.AdmitFrom(g, a) // an entry made, and deleted below
		refused.AdmitFrom(g, b)
		s.HandshakeDone()
		s.Release()
		s.Reset()
		_ = g.Stats()
		_ = g.AddressHandshakes(a)
	})
	assert.Zero(t, allocs)
	holder.Release()
	assert.Zero(t, g.Stats().HandshakeAddresses)
}

func BenchmarkAdmitFromRelease(b *testing.B) {
	g := newGate(b, conngate.DefaultMaxConnections, conngate.DefaultMaxHandshakes)
	addr := netip.MustParseAddr(addrA)
	b.ReportAllocs()
	var s conngate.Slot
	for b.Loop() {
		if s.AdmitFrom(g, addr) != conngate.ReasonNone {
			b.Fatal("refused")
		}
		s.HandshakeDone()
		s.Release()
		s.Reset()
	}
}
