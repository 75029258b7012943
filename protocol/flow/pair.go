package flow

import "context"

// ReservePair blocks until a message of n bytes may be sent on both its
// stream's window and its connection's window, and charges n to both; or
// until ctx is done or either window is closed, and then charges neither.
// n == 0 never waits.
//
// The stream's window is reserved first and held while ReservePair waits
// for the connection's, never the other way round. Holding stream credit
// starves nobody: only the stream's own messages use it. Holding
// connection credit while waiting for a stream's would stall every other
// stream behind one slow consumer. The connection's waiters are served in
// arrival order, so a stream waiting for connection credit is not overtaken
// by streams that arrive later. If the wait for the connection fails, the
// held stream reservation is withdrawn (it never reached the wire; the
// peer cannot return it meanwhile: [SendWindow.Update] does not count held
// bytes as outstanding).
//
// The stream's messages must be reserved in the order they are written;
// callers serialize the sends of one stream (one goroutine sends on a
// stream at a time), as connect-go's and grpc-go's Send require.
func ReservePair(ctx context.Context, stream, conn *SendWindow, n uint64) error {
	if n > maxCharge {
		return ErrTooLarge
	}
	if tryPair(stream, conn, n) {
		return nil
	}
	if err := stream.reserve(ctx, n, nil, true); err != nil {
		return err
	}
	if err := conn.reserve(ctx, n, stream.done, false); err != nil {
		stream.undo(n)
		return err
	}
	stream.commit(n)
	return nil
}

// TryReservePair charges n to both windows and reports true if the message
// may be sent on both now; otherwise it charges neither and reports false.
func TryReservePair(stream, conn *SendWindow, n uint64) bool {
	return n <= maxCharge && tryPair(stream, conn, n)
}

// tryPair is the fast path: both windows locked (always the stream's
// first; nothing else holds two window locks), both checked, both charged
// or neither.
func tryPair(stream, conn *SendWindow, n uint64) bool {
	stream.mu.Lock()
	conn.mu.Lock()
	ok := stream.canTakeLocked(n) && conn.canTakeLocked(n)
	if ok {
		stream.outstanding += n
		conn.outstanding += n
	}
	conn.mu.Unlock()
	stream.mu.Unlock()
	return ok
}
