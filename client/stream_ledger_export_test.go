package client

import "github.com/sluicerpc/sluice/protocol"

// StreamLedger is what the client's connections hold for streams, summed
// over its live connections, for the tests that check that every way a
// stream ends gives everything back: live streams in the tables, bytes
// sent on the connections' send windows and not yet returned by the
// server, bytes received on their receive windows and neither taken nor
// dropped (held), and bytes taken or dropped that the batching has not
// returned yet (pending).
type StreamLedger struct {
	Streams     int
	SentUnacked uint64
	RecvHeld    uint64
	RecvPending uint64
}

// StreamLedgerOf reads c's StreamLedger.
func StreamLedgerOf(c *Client) StreamLedger {
	c.mu.Lock()
	conns := make([]*conn, 0, len(c.conns))
	for cn := range c.conns {
		conns = append(conns, cn)
	}
	c.mu.Unlock()
	var l StreamLedger
	for _, cn := range conns {
		cn.mu.Lock()
		l.Streams += len(cn.streams)
		cn.mu.Unlock()
		l.SentUnacked += cn.sendWin.Outstanding()
		p := cn.recvWin.Pending()
		l.RecvHeld += cn.recvWin.Outstanding() - p
		l.RecvPending += p
	}
	return l
}

// SetOnFrameHook runs f on every connection's reader for each frame read
// (nil removes it).
func SetOnFrameHook(f func(protocol.Header)) {
	if f == nil {
		testHookOnFrame.Store(nil)
		return
	}
	testHookOnFrame.Store(&f)
}
