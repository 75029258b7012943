package client

import (
	"context"
	"encoding/binary"
	"io"

	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/protocol/status"
	"github.com/sluicerpc/sluice/spi"
)

// The connection's side of streams: the table of live streams, the
// connection-level windows (conn.sendWin, conn.recvWin), and the reader's
// dispatch of stream frames. Every check here is a violation that closes
// the connection (docs/streaming.md): the reader returns the error.

// sendStream assigns s the next request id, registers it as a live stream
// and queues its opening Request frame (whose id it patches), as send
// does for a unary call, waiting at most until ctx ends. An error means
// the Request was not queued: ctx's error, or Unavailable.
func (c *conn) sendStream(ctx context.Context, s *Stream, frame []byte) error {
	if err := c.takeSendTurn(ctx); err != nil {
		return err
	}
	c.mu.Lock()
	if c.closed || c.goingAway {
		c.mu.Unlock()
		c.giveSendTurn()
		return errNotSent
	}
	c.nextID++
	id := c.nextID
	s.id = id
	c.streams[id] = s
	if len(c.streams) == 1 {
		c.rd.SetLargeReadAhead(true) // while a stream lives (protocol.Reader)
	}
	c.lastID.Store(id)
	c.mu.Unlock()
	binary.LittleEndian.PutUint64(frame[8:16], id)
	err := c.queueOpening(ctx, frame)
	c.giveSendTurn()
	if err == nil {
		return nil
	}
	c.removeStream(s)
	return err
}

// removeStream takes s out of the table of live streams (once ended).
func (c *conn) removeStream(s *Stream) {
	c.mu.Lock()
	if c.streams[s.id] == s {
		delete(c.streams, s.id)
		if len(c.streams) == 0 {
			c.rd.SetLargeReadAhead(false)
		}
	}
	drained := c.drainedLocked()
	c.mu.Unlock()
	if drained {
		c.close(unavailable("connection drained after GoAway"))
	}
}

// drainedLocked reports whether a connection going away has nothing left
// in flight; c.mu held.
func (c *conn) drainedLocked() bool {
	return c.goingAway && !c.closed && len(c.calls) == 0 && len(c.streams) == 0
}

// dropped returns n bytes of messages dropped unread to the connection
// window (a WindowUpdate at once).
func (c *conn) dropped(n uint64) {
	if n == 0 {
		return
	}
	if r, send := c.recvWin.Drop(n); send {
		c.sendWindowUpdate(0, r)
	}
}

// sendWindowUpdate returns r bytes of id's window (0: the connection's) to
// the server; best effort (a failed write fails the connection anyway).
func (c *conn) sendWindowUpdate(id uint64, r uint64) {
	c.sendWindowUpdateGrowth(id, r, 0)
}

// sendWindowUpdateGrowth returns r bytes and grows the window by growth
// on id; both already counted by the window. What one frame cannot carry
// (a window may owe up to 2·MaxWindow−1) goes in further frames.
//
// It never waits for buffer space: the reader calls it (for messages it
// drops), and so does Receive, neither of which may wait on a server that
// stops reading. The frames are queued beyond the Writer's bound, which
// flow control bounds in turn: bytes are returned only after the server
// sent them, and the server can send no more than the windows allow until
// it reads these returns, so at most one frame (26 bytes) per
// MinMessageCost (64) bytes of open window waits beyond the bound. A
// failed write fails the connection, and with it the windows.
func (c *conn) sendWindowUpdateGrowth(id, r, growth uint64) {
	var b [3 * (protocol.HeaderSize + 10)]byte
	if frames := protocol.AppendWindowReturn(b[:0], id, r, growth); len(frames) > 0 {
		_ = c.w.WriteNoWait(frames)
	}
}

// streamFor is the live stream id names, nil for a stream that ended (its
// frames are ignored: they may have crossed the end), or a violation for
// an id this client never opened as a stream: above the last id it sent,
// or a unary call waiting for its answer. (An id of a unary call that has
// ended cannot be told from an ended stream's without remembering every
// id: it is ignored too.)
func (c *conn) streamFor(id uint64, what protocol.FrameType) (*Stream, error) {
	c.mu.Lock()
	s := c.streams[id]
	_, unary := c.calls[id]
	c.mu.Unlock()
	if s != nil {
		return s, nil
	}
	if id == 0 || unary || id > c.lastID.Load() {
		return nil, &protocol.ProtocolError{Reason: "the server sent a " + what.String() + " frame for a stream this client never opened"}
	}
	return nil, nil
}

// onMessage handles a server's Message frame.
func (c *conn) onMessage(h protocol.Header, payload []byte, m *protocol.Message) error {
	if h.Flags&^protocol.MessageFlagsFromServer != 0 {
		return &protocol.ProtocolError{Reason: "the server sent a Message with a client's flags"}
	}
	perr := protocol.ParseMessage(h, payload, c.lim, m)
	if perr != nil && !metadataLimit(perr) {
		return perr
	}
	n := protocol.MessageCost(len(m.Body), uint64(len(m.Body)))
	if m.Compressed {
		n = protocol.MessageCost(len(m.Body), uint64(m.OriginalLength))
	}
	s, err := c.streamFor(h.ID, h.Type)
	if err != nil {
		return err
	}
	if err := c.recvWin.OnMessage(n); err != nil {
		return err
	}
	if s == nil {
		c.dropped(n)
		return nil
	}
	s.mu.Lock()
	if s.ending { // ended meanwhile (a local end)
		s.mu.Unlock()
		c.dropped(n)
		return nil
	}
	if h.Flags.Has(protocol.FlagHasMetadata) && s.gotFirst {
		s.mu.Unlock()
		return &protocol.ProtocolError{Reason: "the server sent response headers twice on a stream"}
	}
	if err := s.recvWin.OnMessage(n); err != nil {
		s.mu.Unlock()
		return err
	}
	// From here the bytes are the stream's: queued, or dropped by abort.
	s.queue.Push(streamMsg{cost: n})
	msg := s.queue.Back()
	var refuse error
	switch {
	case perr != nil:
		refuse = responseMetadataRefused(perr)
	case m.Compressed:
		msg.codec, msg.declared = c.codecs.recvCodec(m.CodecID), int(m.OriginalLength)
		if msg.codec == nil {
			refuse = c.unknownCodec(m.CodecID)
		} else if err := c.client.cfg.comp.CheckDeclared(uint64(m.OriginalLength), len(m.Body)); err != nil {
			refuse = &bodyError{
				st:    status.Errorf(protocol.CodeResourceExhausted, "the server's %s message refused before decoding: %v", msg.codec.Name(), err),
				cause: spi.ErrDecodedTooLarge,
			}
		}
	}
	msg.buf = protocol.GetMessageBuffer(m.Body)
	msg.data = *msg.buf
	if refuse == nil {
		s.firstFrameLocked(&m.Metadata)
	}
	s.mu.Unlock()
	if refuse != nil {
		s.abort(outcomeRemoteError, refuse) // drops the queue, this message included
		return nil
	}
	s.signal()
	return nil
}

// firstFrameLocked records the response headers when md is the metadata of
// the server's first frame of the stream; s.mu held.
func (s *Stream) firstFrameLocked(md *protocol.Metadata) {
	if s.gotFirst {
		return
	}
	s.gotFirst = true
	copyMetadata(&s.header, md)
	close(s.first)
}

// signal wakes a waiting Receive.
func (s *Stream) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func copyMetadata(dst, src *protocol.Metadata) {
	dst.Reset()
	for i := range src.Len() {
		k, v := src.At(i)
		_ = dst.Add(string(k), v) // the key was validated by the parser
	}
}

// onEnd handles a server's End frame: the stream ended with status OK.
func (c *conn) onEnd(h protocol.Header, payload []byte, e *protocol.End) error {
	if h.Flags&^protocol.EndFlagsFromServer != 0 {
		return &protocol.ProtocolError{Reason: "the server sent an End with a client's flags"}
	}
	perr := protocol.ParseEnd(h, payload, c.lim, e)
	if perr != nil && !metadataLimit(perr) {
		return perr
	}
	s, err := c.streamFor(h.ID, h.Type)
	if s == nil || err != nil {
		return err
	}
	if perr != nil {
		s.abort(outcomeRemoteError, responseMetadataRefused(perr))
		return nil
	}
	s.onEnd(&e.Metadata, outcomeSuccess, io.EOF)
	return nil
}

// onEnd ends the stream for the server's End or Error, whose metadata md
// holds the trailers (and the headers when it is the first frame).
func (s *Stream) onEnd(md *protocol.Metadata, out outcome, err error) {
	s.mu.Lock()
	if !s.ending {
		copyMetadata(&s.trailer, md)
		s.firstFrameLocked(md)
	}
	s.mu.Unlock()
	s.finish(out, err, false)
}

// onStreamError handles an Error frame for a live stream; it reports
// whether id named one.
func (c *conn) onStreamError(id uint64, f *protocol.ErrorFrame) bool {
	c.mu.Lock()
	s := c.streams[id]
	c.mu.Unlock()
	if s == nil {
		return false
	}
	s.onEnd(&f.Metadata, outcomeRemoteError, statusOf(f))
	return true
}

// onWindowUpdate handles a server's WindowUpdate: returned bytes and
// growth for the connection's send window (id 0) or a stream's.
func (c *conn) onWindowUpdate(h protocol.Header, payload []byte) error {
	var u protocol.WindowUpdate
	if err := protocol.ParseWindowUpdate(h, payload, &u); err != nil {
		return err
	}
	if h.ID == 0 {
		return c.sendWin.Update(uint64(u.Returned), uint64(u.Growth))
	}
	s, err := c.streamFor(h.ID, h.Type)
	if s == nil || err != nil {
		return err
	}
	return s.sendWin.Update(uint64(u.Returned), uint64(u.Growth))
}

// failStreams ends every live stream with out and err (a lost connection,
// or a GoAway for the streams above lastID).
func (c *conn) failStreams(above uint64, out outcome, err error) {
	var lost []*Stream
	c.mu.Lock()
	for id, s := range c.streams {
		if id > above {
			lost = append(lost, s)
		}
	}
	c.mu.Unlock()
	for _, s := range lost {
		s.finish(out, err, true)
	}
}
