package server

import (
	"github.com/sluicerpc/sluice/kernel/governor"
	"github.com/sluicerpc/sluice/protocol"
)

// ReasonStreamBytes is the reason of a stream refused because the
// messages it received before admission exceed the governor's
// pre-admission stream bytes (governor.Limits.StreamBytes).
const ReasonStreamBytes = "stream_bytes"

// chargeLocked charges a message of wire bytes received before the
// stream's admission: to the governor's pre-admission stream bytes, and
// while the request waits in the queue to its MaxQueuedBytes. It returns
// the refusal when either is short (nothing charged to the short one).
// s.mu is held: s.cl is valid.
func (s *Stream) chargeLocked(wire int64) (*protocol.ErrorFrame, dropReason) {
	if wire == 0 {
		return nil, 0
	}
	if !s.pre.Take(s.c.s.governor, governor.PartStream, wire) {
		return &protocol.ErrorFrame{Code: protocol.CodeResourceExhausted, Reason: ReasonStreamBytes,
			Message: "server busy: the pre-admission stream bytes budget is full"}, dropStreamBytes
	}
	if !s.cl.permit.ChargeQueued(wire) {
		return &protocol.ErrorFrame{Code: protocol.CodeResourceExhausted, Reason: "queue_full",
			Message: "admission queue full: the stream's queued messages exceed MaxQueuedBytes"}, dropQueueFull
	}
	return nil, 0
}

// refuseLocked refuses the stream before it ran: it records f for the
// call's goroutine to answer, drops the queued messages (their stream
// bytes; it returns their connection bytes, for the caller to give back)
// and gives back the pre-admission budget. s.mu is held.
func (s *Stream) refuseLocked(f *protocol.ErrorFrame, drop dropReason) (connBytes uint64) {
	s.refused, s.refusedD = f, drop
	s.queue.Drain(func(m *streamMsg) {
		s.recv.Drop(m.n)
		connBytes += m.n
		protocol.PutMessageBuffer(m.buf)
	})
	s.pre.Release()
	return connBytes
}

// refusal returns the stream's refusal before it ran, if any.
func (s *Stream) refusal() (*protocol.ErrorFrame, dropReason) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refused, s.refusedD
}

// admit marks the stream admitted, as its handler is about to run: from
// now on its window alone bounds what it holds, and the pre-admission
// budget it held is given back. It returns the refusal instead when the
// stream was refused meanwhile.
func (s *Stream) admit() (*protocol.ErrorFrame, dropReason) {
	s.mu.Lock()
	if s.refused != nil {
		s.mu.Unlock()
		return s.refused, s.refusedD
	}
	s.admitted = true
	s.pre.Release()
	s.mu.Unlock()
	s.growWindow() // not under s.mu: the write may wait for the client
	return nil, 0
}

// growWindow grows the stream's receive window to the stream window in
// force (Options.StreamWindow, SetStreamWindow),
// telling the client (with the bytes the window was keeping for its
// batch). Before admission a stream has the initial window only, so that
// a queued stream buffers at most that.
func (s *Stream) growWindow() {
	grow := uint64(s.c.s.streamWindow.Load()) - protocol.InitialStreamWindow
	if grow == 0 {
		return
	}
	r, g, err := s.recv.Grow(grow)
	if err != nil {
		panic("server: a stream window within the validated bound does not grow: " + err.Error())
	}
	s.c.writeWindowUpdateGrowth(s.id, r, g)
}
