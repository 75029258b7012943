package flow_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/sluicerpc/sluice/protocol/flow"
	"pgregory.net/rapid"
)

// update is a WindowUpdate on the wire from the receiver to the sender.
type update struct {
	stream           int // -1: the connection
	returned, growth uint64
}

// datum is a Message on the wire from the sender to the receiver.
type datum struct {
	stream int
	n      uint64
}

// model is one direction of a connection: a sender with its windows, a
// receiver with its own, and the two wires between them. Each wire keeps
// its order; rapid chooses when each frame is delivered.
type model struct {
	t rapid.TB

	conn    *flow.SendWindow
	streams []*flow.SendWindow
	msgs    [][]uint64 // the messages each stream sends
	next    []int      // the next message each stream sends

	rconn    *flow.RecvWindow
	rstreams []*flow.RecvWindow
	queue    [][]uint64 // received, not yet consumed
	ended    []bool     // the receiver ended the stream (cancel): its messages are dropped
	maxConn  uint64
	maxStrm  uint64

	data    []datum
	updates []update

	sent, taken uint64 // bytes sent, bytes consumed or dropped
}

func newModel(t *rapid.T) *model {
	m := &model{t: t}
	swin := uint32(rapid.IntRange(1, 200).Draw(t, "streamWindow"))
	cwin := uint32(rapid.IntRange(1, 600).Draw(t, "connWindow"))
	m.maxStrm = uint64(swin) + uint64(rapid.IntRange(0, 300).Draw(t, "streamGrowthRoom"))
	m.maxConn = uint64(cwin) + uint64(rapid.IntRange(0, 600).Draw(t, "connGrowthRoom"))
	m.conn = flow.NewSendWindow(cwin, uint32(m.maxConn))
	m.rconn = flow.NewRecvWindow(cwin, uint32(m.maxConn))
	k := rapid.IntRange(1, 3).Draw(t, "streams")
	for i := range k {
		m.streams = append(m.streams, flow.NewSendWindow(swin, uint32(m.maxStrm)))
		m.rstreams = append(m.rstreams, flow.NewRecvWindow(swin, uint32(m.maxStrm)))
		size := rapid.OneOf(
			rapid.Just[uint64](0),
			rapid.Uint64Range(1, 20),
			rapid.Uint64Range(1, 3*uint64(swin)),
		)
		m.msgs = append(m.msgs, rapid.SliceOfN(size, 0, 30).Draw(t, fmt.Sprintf("msgs%d", i)))
	}
	m.next = make([]int, k)
	m.queue = make([][]uint64, k)
	m.ended = make([]bool, k)
	return m
}

func (m *model) send(i int) bool {
	if m.ended[i] || m.next[i] == len(m.msgs[i]) {
		return false
	}
	n := m.msgs[i][m.next[i]]
	want := n == 0 || (m.streams[i].Credit() > 0 && m.conn.Credit() > 0)
	ok := flow.TryReservePair(m.streams[i], m.conn, n)
	if ok != want {
		m.t.Fatalf("stream %d: TryReservePair(%d) = %v at credits %d/%d", i, n, ok, m.streams[i].Credit(), m.conn.Credit())
	}
	if ok {
		m.data = append(m.data, datum{i, n})
		m.next[i]++
		m.sent += n
	}
	return ok
}

func (m *model) held(i int) (h uint64) {
	for _, n := range m.queue[i] {
		h += n
	}
	return h
}

func (m *model) heldConn() (h uint64) {
	for i := range m.queue {
		h += m.held(i)
	}
	return h
}

func (m *model) deliverData() bool {
	if len(m.data) == 0 {
		return false
	}
	d := m.data[0]
	m.data = m.data[1:]
	if d.n > 0 && m.heldConn() >= m.rconn.Window() {
		m.t.Fatalf("a message arrived with the receiver holding %d bytes, window %d", m.heldConn(), m.rconn.Window())
	}
	if err := m.rconn.OnMessage(d.n); err != nil {
		m.t.Fatalf("connection: a violation for a correct sender: %v", err)
	}
	if m.ended[d.stream] {
		r, send := m.rconn.Drop(d.n)
		m.push(-1, r, send)
		m.taken += d.n
		return true
	}
	if d.n > 0 && m.held(d.stream) >= m.rstreams[d.stream].Window() {
		m.t.Fatalf("stream %d: a message arrived with the receiver holding %d bytes, window %d", d.stream, m.held(d.stream), m.rstreams[d.stream].Window())
	}
	if err := m.rstreams[d.stream].OnMessage(d.n); err != nil {
		m.t.Fatalf("stream %d: a violation for a correct sender: %v", d.stream, err)
	}
	m.queue[d.stream] = append(m.queue[d.stream], d.n)
	return true
}

func (m *model) push(stream int, returned uint64, send bool) {
	if send {
		if returned == 0 {
			m.t.Fatalf("an update with nothing returned")
		}
		m.updates = append(m.updates, update{stream: stream, returned: returned})
	}
}

func (m *model) consume(i int) bool {
	if m.ended[i] || len(m.queue[i]) == 0 {
		return false
	}
	n := m.queue[i][0]
	m.queue[i] = m.queue[i][1:]
	r, send := m.rstreams[i].Consume(n)
	m.push(i, r, send)
	r, send = m.rconn.Consume(n)
	m.push(-1, r, send)
	m.taken += n
	return true
}

func (m *model) end(i int) {
	if m.ended[i] {
		return
	}
	m.ended[i] = true
	m.streams[i].Close()
	for _, n := range m.queue[i] {
		r, send := m.rconn.Drop(n)
		m.push(-1, r, send)
		m.taken += n
	}
	m.queue[i] = nil
}

func (m *model) grow(stream int, g uint64) {
	w, max := m.rconn, m.maxConn
	if stream >= 0 {
		w, max = m.rstreams[stream], m.maxStrm
	}
	before := w.Window()
	r, growth, err := w.Grow(g)
	if before+g > max {
		if !errors.Is(err, flow.ErrTooLarge) {
			m.t.Fatalf("Grow(%d) above max %d: %v", g, max, err)
		}
		return
	}
	if err != nil || growth != g {
		m.t.Fatalf("Grow(%d) = %d, %d, %v", g, r, growth, err)
	}
	if r != 0 || g != 0 {
		m.updates = append(m.updates, update{stream, r, g})
	}
}

func (m *model) deliverUpdate() bool {
	if len(m.updates) == 0 {
		return false
	}
	u := m.updates[0]
	m.updates = m.updates[1:]
	w := m.conn
	if u.stream >= 0 {
		w = m.streams[u.stream]
	}
	if err := w.Update(u.returned, u.growth); err != nil {
		m.t.Fatalf("a correct receiver's update %+v refused: %v", u, err)
	}
	return true
}

// drain runs everything to completion: a consumer that keeps consuming.
func (m *model) drain() {
	for progress := true; progress; {
		progress = false
		for i := range m.streams {
			for m.send(i) {
				progress = true
			}
		}
		for m.deliverData() {
			progress = true
		}
		for i := range m.streams {
			for m.consume(i) {
				progress = true
			}
		}
		for m.deliverUpdate() {
			progress = true
		}
	}
}

func (m *model) check() {
	for i := range m.streams {
		if m.ended[i] {
			continue
		}
		if m.next[i] != len(m.msgs[i]) {
			m.t.Fatalf("deadlock: stream %d sent %d of %d messages; credits %d/%d", i, m.next[i], len(m.msgs[i]), m.streams[i].Credit(), m.conn.Credit())
		}
		// Balance: what the sender still counts is what the receiver keeps to return.
		if got, want := m.streams[i].Outstanding(), m.rstreams[i].Pending(); got != want || m.rstreams[i].Outstanding() != want {
			m.t.Fatalf("stream %d: sender outstanding %d, receiver outstanding %d and pending %d", i, got, m.rstreams[i].Outstanding(), want)
		}
	}
	if m.sent != m.taken {
		m.t.Fatalf("sent %d bytes, consumed or dropped %d", m.sent, m.taken)
	}
	if got, want := m.conn.Outstanding(), m.rconn.Pending(); got != want || m.rconn.Outstanding() != want {
		m.t.Fatalf("connection: sender outstanding %d, receiver outstanding %d and pending %d", got, m.rconn.Outstanding(), want)
	}
	// The bytes kept unannounced are below a quarter of the window: then the
	// sender's credit is above three quarters, and nobody waits for them.
	if p := m.rconn.Pending(); p > 0 && p*4 >= m.rconn.Window() {
		m.t.Fatalf("connection: %d bytes kept unannounced, window %d", p, m.rconn.Window())
	}
	// Dropping returns everything at once: all returned.
	if r, send := m.rconn.Drop(0); send {
		if err := m.conn.Update(r, 0); err != nil {
			m.t.Fatal(err)
		}
	}
	if m.conn.Outstanding() != 0 || m.rconn.Outstanding() != 0 {
		m.t.Fatalf("connection not balanced after the final return: %d/%d", m.conn.Outstanding(), m.rconn.Outstanding())
	}
}

// TestPropertyCorrectSender drives a sender and a receiver through random
// sends, deliveries, consumes, drops, growths and update deliveries, and
// checks that no violation is reported, the receiver never holds more than
// a window plus the message that borrowed, nothing deadlocks and the
// accounting balances.
func TestPropertyCorrectSender(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := newModel(t)
		k := len(m.streams)
		steps := rapid.IntRange(20, 400).Draw(t, "steps")
		for range steps {
			switch rapid.IntRange(0, 9).Draw(t, "action") {
			case 0, 1:
				m.send(rapid.IntRange(0, k-1).Draw(t, "s"))
			case 2, 3:
				m.deliverData()
			case 4, 5:
				m.consume(rapid.IntRange(0, k-1).Draw(t, "s"))
			case 6, 7:
				m.deliverUpdate()
			case 8:
				m.grow(rapid.IntRange(-1, k-1).Draw(t, "s"), uint64(rapid.IntRange(0, 200).Draw(t, "g")))
			case 9:
				if rapid.IntRange(0, 4).Draw(t, "endChance") == 0 {
					m.end(rapid.IntRange(0, k-1).Draw(t, "s"))
				}
			}
		}
		m.drain()
		m.check()
	})
}

// TestPropertyIgnoringSenderCaught: a sender that sends without looking at
// its window is caught by the time the receiver holds a full window:
// whenever a message arrives while the receiver holds at least the window
// (bytes received and not consumed), OnMessage reports a violation.
func TestPropertyIgnoringSenderCaught(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		win := uint32(rapid.IntRange(1, 200).Draw(t, "window"))
		r := flow.NewRecvWindow(win, 1<<31-1)
		var held uint64
		var queue []uint64
		for range rapid.IntRange(1, 200).Draw(t, "steps") {
			if rapid.Bool().Draw(t, "send") {
				n := uint64(rapid.IntRange(0, 3*int(win)).Draw(t, "n"))
				err := r.OnMessage(n)
				if n > 0 && held >= uint64(win) && err == nil {
					t.Fatalf("a message of %d bytes accepted while the receiver holds %d, window %d", n, held, win)
				}
				if err != nil {
					return // caught: the connection closes
				}
				held += n
				queue = append(queue, n)
			} else if len(queue) > 0 {
				r.Consume(queue[0]) // whatever it returns, the sender ignores it
				held -= queue[0]
				queue = queue[1:]
			}
		}
	})
}
