package conngate_test

import (
	"testing"

	"github.com/sluicerpc/sluice/server/internal/conngate"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func newGate(t testing.TB, maxConns, maxHandshakes int) *conngate.Gate {
	t.Helper()
	g, err := conngate.New(conngate.Limits{MaxConnections: maxConns, MaxHandshakes: maxHandshakes})
	require.NoError(t, err)
	return g
}

func counts(g *conngate.Gate) [2]int {
	s := g.Stats()
	return [2]int{s.Connections, s.Handshakes}
}

// gateOp is one step of a deterministic script: admit slot i, finish its
// handshake, release it, or change the limits.
type gateOp struct {
	op     string // "admit", "done", "release", "limits"
	slot   int
	limits conngate.Limits
	want   any // Reason for admit, bool for done/release, nil for limits
	counts [2]int
}

func runGateScript(t *testing.T, g *conngate.Gate, slots []conngate.Slot, script []gateOp) {
	t.Helper()
	for i, s := range script {
		switch s.op {
		case "admit":
			assert.Equal(t, s.want, slots[s.slot].Admit(g), "step %d admit %d", i, s.slot)
		case "done":
			assert.Equal(t, s.want, slots[s.slot].HandshakeDone(), "step %d done %d", i, s.slot)
		case "release":
			assert.Equal(t, s.want, slots[s.slot].Release(), "step %d release %d", i, s.slot)
		case "limits":
			require.NoError(t, g.SetLimits(s.limits), "step %d", i)
		}
		assert.Equal(t, s.counts, counts(g), "step %d %s %d", i, s.op, s.slot)
	}
}

func TestGateScripts(t *testing.T) {
	const (
		none = conngate.ReasonNone
		conn = conngate.ReasonConnectionLimit
		hs   = conngate.ReasonHandshakeLimit
	)
	lim := func(c, h int) conngate.Limits { return conngate.Limits{MaxConnections: c, MaxHandshakes: h} }
	tests := []struct {
		name         string
		maxC, maxH   int
		script       []gateOp
		wantAdmitted uint64
		wantRejConn  uint64
		wantRejHs    uint64
	}{
		{"admit up to the connection bound then refuse", 2, 0, []gateOp{
			{op: "admit", slot: 0, want: none, counts: [2]int{1, 1}},
			{op: "admit", slot: 1, want: none, counts: [2]int{2, 2}},
			{op: "admit", slot: 2, want: conn, counts: [2]int{2, 2}},
			{op: "done", slot: 0, want: true, counts: [2]int{2, 1}},
			{op: "admit", slot: 2, want: conn, counts: [2]int{2, 1}},
			{op: "release", slot: 0, want: true, counts: [2]int{1, 1}},
			{op: "admit", slot: 2, want: none, counts: [2]int{2, 2}},
		}, 3, 2, 0},
		{"handshake bound independent of the connection bound", 4, 2, []gateOp{
			{op: "admit", slot: 0, want: none, counts: [2]int{1, 1}},
			{op: "admit", slot: 1, want: none, counts: [2]int{2, 2}},
			{op: "admit", slot: 2, want: hs, counts: [2]int{2, 2}},
			{op: "done", slot: 0, want: true, counts: [2]int{2, 1}},
			{op: "admit", slot: 2, want: none, counts: [2]int{3, 2}},
			{op: "done", slot: 1, want: true, counts: [2]int{3, 1}},
			{op: "done", slot: 2, want: true, counts: [2]int{3, 0}},
			{op: "admit", slot: 3, want: none, counts: [2]int{4, 1}},
			{op: "done", slot: 3, want: true, counts: [2]int{4, 0}},
			{op: "admit", slot: 4, want: conn, counts: [2]int{4, 0}},
		}, 4, 1, 1},
		{"connection bound checked first", 1, 1, []gateOp{
			{op: "admit", slot: 0, want: none, counts: [2]int{1, 1}},
			{op: "admit", slot: 1, want: conn, counts: [2]int{1, 1}},
		}, 1, 1, 0},
		{"handshake done frees only the handshake slot", 3, 1, []gateOp{
			{op: "admit", slot: 0, want: none, counts: [2]int{1, 1}},
			{op: "done", slot: 0, want: true, counts: [2]int{1, 0}},
			{op: "done", slot: 0, want: false, counts: [2]int{1, 0}},
			{op: "release", slot: 0, want: true, counts: [2]int{0, 0}},
			{op: "release", slot: 0, want: false, counts: [2]int{0, 0}},
			{op: "done", slot: 0, want: false, counts: [2]int{0, 0}},
		}, 1, 0, 0},
		{"release before handshake done frees both", 3, 1, []gateOp{
			{op: "admit", slot: 0, want: none, counts: [2]int{1, 1}},
			{op: "release", slot: 0, want: true, counts: [2]int{0, 0}},
			{op: "done", slot: 0, want: false, counts: [2]int{0, 0}},
			{op: "release", slot: 0, want: false, counts: [2]int{0, 0}},
		}, 1, 0, 0},
		{"never admitted slot releases nothing", 1, 1, []gateOp{
			{op: "done", slot: 0, want: false, counts: [2]int{0, 0}},
			{op: "release", slot: 0, want: false, counts: [2]int{0, 0}},
			{op: "admit", slot: 0, want: none, counts: [2]int{1, 1}},
			{op: "admit", slot: 1, want: conn, counts: [2]int{1, 1}},
			{op: "done", slot: 1, want: false, counts: [2]int{1, 1}},
			{op: "release", slot: 1, want: false, counts: [2]int{1, 1}},
		}, 1, 1, 0},
		{"lowering closes nothing and refuses until under", 4, 4, []gateOp{
			{op: "admit", slot: 0, want: none, counts: [2]int{1, 1}},
			{op: "admit", slot: 1, want: none, counts: [2]int{2, 2}},
			{op: "admit", slot: 2, want: none, counts: [2]int{3, 3}},
			{op: "limits", limits: lim(2, 1), counts: [2]int{3, 3}},
			{op: "admit", slot: 3, want: conn, counts: [2]int{3, 3}},
			{op: "release", slot: 0, want: true, counts: [2]int{2, 2}},
			{op: "admit", slot: 3, want: conn, counts: [2]int{2, 2}},
			{op: "release", slot: 1, want: true, counts: [2]int{1, 1}},
			{op: "admit", slot: 3, want: hs, counts: [2]int{1, 1}},
			{op: "done", slot: 2, want: true, counts: [2]int{1, 0}},
			{op: "admit", slot: 3, want: none, counts: [2]int{2, 1}},
			{op: "admit", slot: 4, want: conn, counts: [2]int{2, 1}},
		}, 4, 3, 1},
		{"raising admits exactly the difference", 2, 0, []gateOp{
			{op: "admit", slot: 0, want: none, counts: [2]int{1, 1}},
			{op: "admit", slot: 1, want: none, counts: [2]int{2, 2}},
			{op: "admit", slot: 2, want: conn, counts: [2]int{2, 2}},
			{op: "limits", limits: lim(5, 0), counts: [2]int{2, 2}},
			{op: "admit", slot: 2, want: none, counts: [2]int{3, 3}},
			{op: "admit", slot: 3, want: none, counts: [2]int{4, 4}},
			{op: "admit", slot: 4, want: none, counts: [2]int{5, 5}},
			{op: "admit", slot: 5, want: conn, counts: [2]int{5, 5}},
			{op: "limits", limits: lim(6, 5), counts: [2]int{5, 5}},
			{op: "admit", slot: 5, want: hs, counts: [2]int{5, 5}},
			{op: "limits", limits: lim(6, 6), counts: [2]int{5, 5}},
			{op: "admit", slot: 5, want: none, counts: [2]int{6, 6}},
		}, 6, 2, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newGate(t, tt.maxC, tt.maxH)
			slots := make([]conngate.Slot, 6)
			runGateScript(t, g, slots, tt.script)
			st := g.Stats()
			assert.Equal(t, tt.wantAdmitted, st.Admitted, "admitted")
			assert.Equal(t, tt.wantRejConn, st.RejectedConnectionLimit, "rejected connection_limit")
			assert.Equal(t, tt.wantRejHs, st.RejectedHandshakeLimit, "rejected handshake_limit")
		})
	}
}

func TestSlotMisusePanics(t *testing.T) {
	g := newGate(t, 4, 0)
	var s conngate.Slot
	require.Equal(t, conngate.ReasonNone, s.Admit(g))
	const admitted = "conngate: Slot.Admit on a Slot already admitted (Reset it after Release before reuse)"
	assert.PanicsWithValue(t, admitted, func() { s.Admit(g) })
	assert.PanicsWithValue(t, "conngate: Slot.Reset of a Slot that still holds slots (Release it first)", func() { s.Reset() })
	s.HandshakeDone()
	assert.PanicsWithValue(t, "conngate: Slot.Reset of a Slot that still holds slots (Release it first)", func() { s.Reset() })
	require.True(t, s.Release())
	assert.PanicsWithValue(t, admitted, func() { s.Admit(g) })
	assert.Equal(t, [2]int{0, 0}, counts(g))

	// Reset makes the slot reusable.
	s.Reset()
	require.Equal(t, conngate.ReasonNone, s.Admit(g))
	require.True(t, s.Release())
	assert.Equal(t, [2]int{0, 0}, counts(g))
	assert.Equal(t, uint64(2), g.Stats().Admitted)
}

func TestAdmitReleaseAllocatesNothing(t *testing.T) {
	g := newGate(t, 8, 2)
	var s conngate.Slot
	var refused conngate.Slot
	full := newGate(t, 1, 0)
	var holder conngate.Slot
	require.Equal(t, conngate.ReasonNone, holder.Admit(full))
	allocs := testing.AllocsPerRun(1000, func() {
		s.Admit(g)
		s.HandshakeDone()
		s.Release()
		s.Reset()
		refused.Admit(full) // the refusal path too
		_ = g.Stats()
	})
	assert.Zero(t, allocs)
	holder.Release()
}

func BenchmarkAdmitRelease(b *testing.B) {
	g := newGate(b, conngate.DefaultMaxConnections, conngate.DefaultMaxHandshakes)
	b.ReportAllocs()
	var s conngate.Slot
	for b.Loop() {
		if s.Admit(g) != conngate.ReasonNone {
			b.Fatal("refused")
		}
		s.HandshakeDone()
		s.Release()
		s.Reset()
	}
}

func BenchmarkAdmitRefused(b *testing.B) {
	g := newGate(b, 1, 0)
	var holder, s conngate.Slot
	require.Equal(b, conngate.ReasonNone, holder.Admit(g))
	b.ReportAllocs()
	for b.Loop() {
		if s.Admit(g) == conngate.ReasonNone {
			b.Fatal("admitted")
		}
	}
	holder.Release()
}
