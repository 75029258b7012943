// Package flow implements the flow-control accounting of sluice streams
// (docs/streaming.md, "Flow control"): one [SendWindow] per window on the
// sending side and one [RecvWindow] per window on the receiving side, for
// each stream and for the connection, in each direction.
//
// The package deals in byte counts only. It neither reads nor writes frames:
// a receiver's [RecvWindow] says when to send a WindowUpdate and with which
// figures, and the connection's read loop feeds the WindowUpdates it
// receives to the sender's [SendWindow.Update]. The unit is the uncompressed
// length of a message body. Window sizes are parameters: pass the protocol
// package's InitialStreamWindow, InitialConnWindow and MaxWindow.
//
// # The rules
//
// For each window the sender keeps window and outstanding (bytes sent and
// not yet returned); credit = window - outstanding. A message of n > 0 bytes
// may be sent on a window when its credit is positive: it either fits
// (n <= credit) or borrows (n > credit, the credit goes negative), and then
// nothing more is sent on that window until returns bring the credit above
// zero again. A message of 0 bytes costs nothing and needs no credit. A
// message is sent only when both its stream's and its connection's window
// allow it ([ReservePair]).
//
// "A window never has two borrowing messages outstanding" is read as: a
// borrow is outstanding while the debt it created is, that is while the
// credit is zero or negative. A message that arrives while the receiver's
// view of the credit is zero or negative is a violation, and that covers a
// second borrow. The literal byte reading, "until the borrowing message's
// own bytes are returned", deadlocks with the batching rule below: with a
// window of 100, send 80 (credit 20), then 24 (borrows: credit -4); the
// receiver consumes 80 and returns it (a quarter reached), then consumes 24
// and keeps it (below a quarter, credit 76 > 0); the sender, with credit 76
// and the 24 bytes of the borrowing message not returned, may not send a
// message of 90 (it would be a second borrow) and waits forever.
//
// The receiver returns bytes when the consumer takes a message ([RecvWindow.Consume]),
// in batches: a WindowUpdate when the bytes to return reach a quarter of the
// window, or at once when the sender's credit is exhausted (zero or
// negative in the receiver's view). Messages dropped unread are returned at
// once ([RecvWindow.Drop]). Growth ([RecvWindow.Grow]) is announced at once.
// A WindowUpdate that returns more than is outstanding (a double return) or
// grows the window above MaxWindow is a violation ([SendWindow.Update]).
//
// # Why the accounting is consistent
//
// The receiver counts as returned only what it has announced, and WindowUpdates
// travel in order, so at any moment the sender's figures lag the receiver's:
// the sender's returned bytes and window are at most the receiver's, and its
// credit at most the receiver's view of it. A sender that follows the rules
// therefore never causes a violation, however late its WindowUpdates arrive,
// and a violation the receiver reports is always the sender's fault. A
// message is sent only while the sender's outstanding is below its window,
// so the receiver never holds more than the window plus the last message
// received on it (the one that may have borrowed). If the consumer keeps
// consuming, the sender is never blocked forever: once everything sent has
// been consumed and every announced WindowUpdate delivered, the bytes not
// yet announced are below a quarter of the window, so the credit is above
// three quarters of it.
//
// # Violations and errors
//
// Violations are [*protocol.ProtocolError] values (protocol.IsViolation
// reports them): the connection must be closed. [ErrClosed] reports a
// window closed by [SendWindow.Close]; a context's error is returned as is.
package flow
