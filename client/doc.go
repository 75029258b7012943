// Package client is the sluice RPC client: multiplexed connections that speak
// the framed protocol of package protocol over TCP or TLS, unary and one-way
// calls, deadlines carried to the server as time budgets, remote
// cancellation, and retries across endpoints when they are safe.
//
// # Connections
//
// A Client holds at most one multiplexed connection per endpoint. Dial
// connects to every endpoint before it returns and fails only when none is
// reachable; afterwards connections are re-established on demand: the first
// call that needs an endpoint without a connection dials it, and failed
// dials back off exponentially with jitter (Options.Backoff). A call that
// needs an endpoint whose dial is running waits for it, within its context;
// one that needs an endpoint backing off after a failed dial fails that
// attempt at once with the dial's Unavailable error (and moves on to
// another endpoint, or fails), unless it was made with WaitForReady: then
// it waits for the backoff and the next dials, within its context.
//
// Each connection has one reader goroutine, which hands every Response and
// Error frame to the call waiting for it, answers the server's Pings and
// handles GoAway, plus the flusher goroutine of its protocol.Writer. A call
// starts no goroutine: it encodes its request into a pooled buffer, queues
// it on the connection's coalescing writer and waits on its own pooled
// channel. No lock is held across network I/O.
//
// # Errors
//
// A call that ends with an Error frame returns the server's *status.Error
// (code, message, reason, retry hint). A method missing from the server's
// method table fails with Unimplemented before anything is sent. A failed
// transport (no connection, a lost connection, a GoAway) returns a
// *status.Error with code Unavailable; a connection-level Error frame ends
// the calls of its connection with its own status; a closed Client returns
// Canceled. When the call's context ends first, the call returns the
// context's error (context.Canceled or context.DeadlineExceeded; wrapped
// with what the dial was doing when it ended during a dial), and
// status.Code maps those to Canceled and DeadlineExceeded; the server's
// copy of the deadline (the time budget) may also end the call first, with
// a DeadlineExceeded *status.Error.
//
// # Compression
//
// The handshake offers the codec profiles of Options.Compression (by
// default codecs.Builtin(): zstd, gzip, br), in that order. Each connection
// sends its requests compressed with the first of them that the server's
// HandshakeAck accepts (uncompressed when it accepts none), when the
// call's policy finds it worth it: by default a body of at least 1 KiB
// whose compressed form saves at least 64 bytes and 5%; per method with
// Options.Compression.Methods; per call with the Compression and
// NoCompression call options. Unary and one-way calls alike; a retry on
// another connection uses that connection's codec.
//
// A compressed response is decoded by the calling goroutine, never the
// connection's reader, under the call's context and the bounds of
// Options.Compression, so that a hostile server's bomb costs at most the
// length it declares: its codec id must name a profile the client offered
// and the server accepted (else Internal); its declared length must be
// within MaxDecodedSize and the expansion-ratio bound for its compressed
// size, checked before anything is decoded or retained (else
// ResourceExhausted); it is decoded with that length as the limit, and a
// body that decodes to more or less, is corrupt or has trailing bytes fails
// with DataLoss (errors.Is finds spi.ErrDecodedTooLarge or spi.ErrCorrupt).
// Each of these fails only its call: the connection stays up.
//
// # Retries
//
// An attempt is retried, on another endpoint when there is one and with a new
// request id, only when it is safe: the request was never written; the
// server refused it by admission with ResourceExhausted and a RetryAfter
// hint; a stopping server refused it unrun (Unavailable with a reason); a
// GoAway said it was not processed; or, for methods declared
// idempotent (Options.IdempotentMethods or the Idempotent call option),
// the connection was lost or the server answered Unavailable. Attempts are
// bounded by the context's deadline and by MaxAttempts (default 3). A
// RetryAfter hint is waited only when an attempt is left after it and the
// deadline fits the wait plus another attempt. A one-way call is never
// retried once it was written.
//
// An attempt refused by the endpoint policy was never written: the call
// moves on to another endpoint the policy has not refused, spending no
// attempt; only when every endpoint refused does it fail (or wait), with
// the shortest hint.
package client
