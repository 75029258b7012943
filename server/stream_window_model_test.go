package server_test

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/server"
)

// The window model (issue 13, item 6): random sequences of raw client
// frames for a few streams, against a model of both sides' window
// arithmetic (docs/streaming.md, Flow control) that predicts exactly when
// the server must close the connection as a violation, and otherwise what
// it returns and that it keeps serving. The streams are stream/Hold (its
// handler never receives nor sends: the server holds every byte sent to
// it) and stream/Count (a server stream: the server sends "0".."n-1" and
// End), so that every byte the server holds or returns is known.
//
// Every message is charged protocol.MessageCost (wmCost), empty ones
// included.

// wmCost is the charge of an uncompressed message of n bytes.
func wmCost(n int) uint64 { return protocol.MessageCost(n, uint64(n)) }

// recvModel is the server's view of one receive window: window, bytes
// received and not announced as returned, of which pending were taken and
// wait for the batch.
type recvModel struct{ window, out, pending uint64 }

// accepts reports whether a message of n > 0 bytes may arrive: the credit
// is positive.
func (w *recvModel) accepts() bool { return w.out < w.window }

// consume is the receiver taking n bytes: the bytes a WindowUpdate returns
// now (a quarter of the window, or the sender's credit exhausted), or 0.
func (w *recvModel) consume(n uint64) uint64 {
	w.pending += n
	if w.pending*4 >= w.window || w.out >= w.window {
		r := w.pending
		w.out -= r
		w.pending = 0
		return r
	}
	return 0
}

// drop is the receiver discarding n bytes unread: they go back at once,
// with what the batch was keeping.
func (w *recvModel) drop(n uint64) uint64 {
	w.pending += n
	r := w.pending
	w.out -= r
	w.pending = 0
	return r
}

// sendModel is the server's view of one send window, as the client
// predicts it: window and bytes sent and not returned.
type sendModel struct{ window, out uint64 }

// update is a WindowUpdate the client sends: false when it is a
// violation (a double return, a window above MaxWindow, or nothing).
func (w *sendModel) update(returned, growth uint64) bool {
	if returned == 0 && growth == 0 || returned > w.out || w.window+growth > protocol.MaxWindow {
		return false
	}
	w.out -= returned
	w.window += growth
	return true
}

// Stream states in the model.
const (
	wmOpen       = iota // live, the client may send
	wmHalfClosed        // live, the client half-closed
	wmEnded             // the server ended it (its Error or End was read)
)

type wmStream struct {
	id    uint64
	state int
	recv  recvModel // the server's receive window of the stream
	send  sendModel // its send window (Hold sends nothing)
}

// windowModel is one connection's model.
type windowModel struct {
	c       *rawClient
	rt      *rapid.T
	h       *streamHandlers
	conn    recvModel // the server's connection receive window
	connOut sendModel // the server's connection send window
	streams []*wmStream
	log     []string // what was done, for the failure message
}

func (m *windowModel) logf(format string, args ...any) {
	m.log = append(m.log, fmt.Sprintf(format, args...))
}

func (m *windowModel) fatalf(format string, args ...any) {
	m.rt.Fatalf("%s\nframes sent:\n  %s", fmt.Sprintf(format, args...), strings.Join(m.log, "\n  "))
}

// expectReturns reads stream frames until the WindowUpdates on the
// connection returned want bytes and those on stream ids returned
// wantStream[id]; the frames must be exactly those, but for the others
// allowed (which it returns).
func (m *windowModel) expectReturns(want uint64, wantStream map[uint64]uint64, others int) []streamFrame {
	var got uint64
	gotStream := map[uint64]uint64{}
	var fs []streamFrame
	done := func() bool {
		if got != want || len(fs) != others {
			return false
		}
		for id, n := range wantStream {
			if gotStream[id] != n {
				return false
			}
		}
		return true
	}
	for !done() {
		f := m.c.nextStream()
		switch {
		case f.typ == protocol.FrameWindowUpdate && f.id == 0:
			got += uint64(f.wu.Returned)
			if f.wu.Growth != 0 || got > want {
				m.fatalf("the server returned %d connection bytes (growth %d), the model %d", got, f.wu.Growth, want)
			}
		case f.typ == protocol.FrameWindowUpdate:
			gotStream[f.id] += uint64(f.wu.Returned)
			if gotStream[f.id] > wantStream[f.id] {
				m.fatalf("the server returned %d bytes on stream %d, the model %d", gotStream[f.id], f.id, wantStream[f.id])
			}
		default:
			fs = append(fs, f)
			if len(fs) > others {
				m.fatalf("an unexpected frame: %+v", f)
			}
		}
	}
	return fs
}

// quiet checks, with a Ping, that the server sent nothing else: no
// WindowUpdate, no frame (every frame the reader writes comes before its
// Pong).
func (m *windowModel) quiet() {
	if fs := m.c.pingPong(); len(fs) != 0 {
		m.fatalf("the server sent %+v, the model expects nothing", fs)
	}
}

// violation expects the connection to close with a connection Error.
func (m *windowModel) violation(why string) {
	m.logf("(the model: a violation, %s)", why)
	e := m.c.expectClosed()
	if e == nil || !strings.Contains(e.Message, "protocol violation") {
		m.fatalf("the model predicts a violation (%s); the connection ended with %+v", why, e)
	}
}

var wmSizes = rapid.SampledFrom([]int{1, 2, 100, 1000, 16 << 10, 40_000, protocol.InitialStreamWindow - 1, protocol.InitialStreamWindow, 100_000, 300_000})

// step draws and runs one action; it reports false once the connection
// ended with a predicted violation.
func (m *windowModel) step() bool {
	rt, c := m.rt, m.c
	live := func() *wmStream {
		if len(m.streams) == 0 {
			return nil
		}
		return m.streams[rapid.IntRange(0, len(m.streams)-1).Draw(rt, "stream")]
	}
	switch rapid.IntRange(0, 9).Draw(rt, "action") {
	case 0: // open a stream/Hold, with or without a first message, half-closed or not
		var body []byte
		if rapid.Bool().Draw(rt, "withMsg") {
			body = make([]byte, wmSizes.Draw(rt, "size"))
		}
		end := rapid.Bool().Draw(rt, "endStream")
		id := c.open("stream", "Hold", body, end)
		m.logf("Request %d stream/Hold msg=%v(%d) end=%v", id, body != nil, len(body), end)
		var n uint64
		if body != nil {
			n = wmCost(len(body))
		}
		if n > 0 && !m.conn.accepts() {
			m.violation("an opening message without connection credit")
			return false
		}
		m.conn.out += n
		s := &wmStream{id: id, recv: recvModel{window: protocol.InitialStreamWindow, out: n}, send: sendModel{window: protocol.InitialStreamWindow}}
		if end {
			s.state = wmHalfClosed
		}
		m.streams = append(m.streams, s)
		<-m.h.entered
		m.quiet()
	case 1: // a stream/Count: the server sends "0".."n-1", End
		k := rapid.IntRange(0, 30).Draw(rt, "count")
		body := []byte(strconv.Itoa(k))
		if !m.conn.accepts() {
			id := c.open("stream", "Count", body, true)
			m.logf("Request %d stream/Count %d", id, k)
			m.violation("an opening message without connection credit")
			return false
		}
		id := c.open("stream", "Count", body, true)
		m.logf("Request %d stream/Count %d", id, k)
		m.conn.out += wmCost(len(body))
		ret := m.conn.consume(wmCost(len(body))) // the handler takes its request
		fs := m.expectReturns(ret, nil, k+1)
		var sent uint64
		for i, f := range fs[:k] {
			if f.typ != protocol.FrameMessage || f.id != id || string(f.body) != strconv.Itoa(i) {
				m.fatalf("stream/Count message %d: %+v", i, f)
			}
			sent += wmCost(len(f.body))
		}
		if f := fs[k]; f.typ != protocol.FrameEnd || f.id != id {
			m.fatalf("stream/Count ends with %+v", f)
		}
		m.connOut.out += sent
		m.streams = append(m.streams, &wmStream{id: id, state: wmEnded, send: sendModel{window: protocol.InitialStreamWindow}})
	case 2, 3: // a Message on a stream
		s := live()
		if s == nil {
			return true
		}
		n := uint64(wmSizes.Draw(rt, "size"))
		if rest := s.recv.window - min(s.recv.out, s.recv.window); rest > 0 && rapid.IntRange(0, 2).Draw(rt, "exact?") == 0 {
			n = rest // exactly the stream's credit: the next message has none
		}
		end := rapid.IntRange(0, 3).Draw(rt, "endStream") == 0
		c.msg(s.id, make([]byte, n), end)
		m.logf("Message %d (%d bytes) end=%v", s.id, n, end)
		n = wmCost(int(n))
		if !m.conn.accepts() {
			m.violation("a message without connection credit")
			return false
		}
		m.conn.out += n
		switch {
		case s.state == wmEnded: // ignored: dropped, returned at once
			m.expectReturns(m.conn.drop(n), nil, 0)
			m.quiet()
			return true
		case s.state == wmHalfClosed:
			m.violation("a message after the half-close")
			return false
		case !s.recv.accepts():
			m.violation("a message without stream credit")
			return false
		}
		s.recv.out += n
		if end {
			s.state = wmHalfClosed
		}
		m.quiet()
	case 4: // End
		s := live()
		if s == nil {
			return true
		}
		c.end(s.id)
		m.logf("End %d", s.id)
		switch s.state {
		case wmHalfClosed:
			m.violation("an End after the half-close")
			return false
		case wmOpen:
			s.state = wmHalfClosed
		}
		m.quiet()
	case 5: // Cancel
		s := live()
		if s == nil {
			return true
		}
		c.cancel(s.id)
		m.logf("Cancel %d", s.id)
		if s.state == wmEnded {
			m.quiet()
			return true
		}
		// The server ends it: its Error, and the bytes it held go back to
		// the connection (with the batch) when it is released.
		var ret uint64
		if s.recv.out > 0 {
			ret = m.conn.drop(s.recv.out)
		}
		fs := m.expectReturns(ret, nil, 1)
		if f := fs[0]; f.typ != protocol.FrameError || f.id != s.id || f.err.Code != protocol.CodeCanceled {
			m.fatalf("the cancelled stream %d ends with %+v", s.id, f)
		}
		if err := <-m.h.ctxErr; err == nil {
			m.fatalf("stream/Hold returned without its context ending")
		}
		s.state = wmEnded
		m.quiet()
	case 6, 7: // a WindowUpdate: the connection's or a stream's
		var w *sendModel
		id := uint64(0)
		var s *wmStream
		if rapid.Bool().Draw(rt, "onStream") {
			if s = live(); s == nil {
				return true
			}
			id, w = s.id, &s.send
		} else {
			w = &m.connOut
		}
		var returned, growth uint64
		switch rapid.IntRange(0, 5).Draw(rt, "kind") {
		case 0, 1: // within what the server sent
			if w.out > 0 {
				returned = uint64(rapid.Uint64Range(1, w.out).Draw(rt, "returned"))
			}
		case 2: // one more than it sent: a double return
			returned = w.out + 1
		case 3: // growth
			growth = uint64(rapid.IntRange(1, 1<<20).Draw(rt, "growth"))
		case 4: // growth past MaxWindow
			growth = protocol.MaxWindow - w.window + 1
		case 5:
			if w.out > 0 {
				returned = uint64(rapid.Uint64Range(1, w.out).Draw(rt, "returned"))
			}
			growth = uint64(rapid.IntRange(1, 1<<16).Draw(rt, "growth"))
		}
		if returned == 0 && growth == 0 {
			growth = 1
		}
		c.windowUpdate(id, uint32(returned), uint32(growth))
		m.logf("WindowUpdate %d returned=%d growth=%d", id, returned, growth)
		if s != nil && s.state == wmEnded {
			m.quiet() // ignored: it may have crossed the end
			return true
		}
		if !w.update(returned, growth) {
			m.violation("a double return or a window above MaxWindow")
			return false
		}
		m.quiet()
	case 8: // a frame for an id never opened
		id := c.nextID + uint64(rapid.IntRange(1, 3).Draw(rt, "ahead"))
		switch rapid.IntRange(0, 2).Draw(rt, "frame") {
		case 0:
			c.msg(id, []byte("x"), false)
			m.logf("Message %d (never opened)", id)
		case 1:
			c.end(id)
			m.logf("End %d (never opened)", id)
		default:
			c.windowUpdate(id, 0, 1)
			m.logf("WindowUpdate %d (never opened)", id)
		}
		m.violation("a frame for a stream never opened")
		return false
	case 9: // a unary call goes through
		if r := c.call("echo", "Say", []byte("ok")); r.err != nil || string(r.body) != "ok" {
			m.fatalf("a unary call between the stream frames: %+v", r)
		}
		m.logf("Request %d echo/Say", c.nextID)
		m.quiet()
	}
	return true
}

// windowModelChecks sets rapid's number of checks: STREAMMODEL_CHECKS,
// or -rapid.checks when given, else def.
func windowModelChecks(t *testing.T, def int) {
	t.Helper()
	explicit := false
	flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "rapid.checks" })
	n := def
	if v, ok := os.LookupEnv("STREAMMODEL_CHECKS"); ok {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			t.Fatalf("STREAMMODEL_CHECKS=%q: %v", v, err)
		}
	} else if explicit {
		return
	}
	old := flag.Lookup("rapid.checks").Value.String()
	if err := flag.Set("rapid.checks", strconv.Itoa(n)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = flag.Set("rapid.checks", old) })
}

// TestStreamWindowsAgainstAModel: for random frame sequences, the server
// closes the connection as a violation exactly when the model says so (a
// message past the credit, a double return, a window above MaxWindow, a
// frame for a never-opened id, a message or End after the half-close), and
// otherwise returns exactly the bytes the model returns and keeps serving;
// once the connection ends, everything is released.
func TestStreamWindowsAgainstAModel(t *testing.T) {
	windowModelChecks(t, 100)
	s := startServer(t, server.Options{})
	h := s.mux.st
	rapid.Check(t, func(rt *rapid.T) {
		violations := s.Stats().ProtocolViolations
		c := dialStream(t, s.addr)
		m := &windowModel{c: c, rt: rt, h: h,
			conn:    recvModel{window: protocol.InitialConnWindow},
			connOut: sendModel{window: protocol.InitialConnWindow}}
		closed := false
		for range rapid.IntRange(1, 40).Draw(rt, "steps") {
			if !m.step() {
				closed = true
				violations++
				break
			}
		}
		if !closed {
			if r := c.call("echo", "Say", []byte("still")); r.err != nil {
				m.fatalf("the connection does not serve: %+v", r.err)
			}
		}
		_ = c.nc.Close()
		// Every stream/Hold still running ends with the connection.
		live := 0
		for _, st := range m.streams {
			if st.state != wmEnded {
				live++
			}
		}
		for range live {
			select {
			case <-h.ctxErr:
			case <-time.After(10 * time.Second):
				m.fatalf("a stream/Hold did not end with its connection")
			}
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			st := s.Stats()
			g := st.Governor
			if st.ServerCalls.Active == 0 && st.ServerCalls.Reserved == 0 && g.Stream.Used == 0 && g.Decoded.Used == 0 && g.Retained.Used == 0 && g.Decodes.Used == 0 {
				if st.ProtocolViolations != violations {
					m.fatalf("protocol violations: %d, the model %d", st.ProtocolViolations, violations)
				}
				return
			}
			if time.Now().After(deadline) {
				m.fatalf("after the connection ended the server holds %+v, governor %+v", st.ServerCalls, g)
			}
			time.Sleep(time.Millisecond)
		}
	})
}
