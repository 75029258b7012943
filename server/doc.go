// Package server is the sluice RPC server: the framed protocol of package
// protocol over TCP or TLS, connection admission in the accept loop, call
// capacity per connection and per server, and the optional admission
// policy of package kernel on every request, all changeable while traffic
// flows.
//
// A request goes through parse -> capture -> admit -> reserve -> decode ->
// activate -> handler -> release. The connection's reader parses the frame
// and captures the current admission program once; that program decides
// the request's admission, its queueing and its release, whatever is
// published meanwhile. A request that must queue waits on its own goroutine
// (the reader keeps reading other requests, Cancel and control frames). A
// call capacity reservation is taken before the body is decoded, so a
// refused request costs no decode; the reservation becomes active when the
// handler starts and is released, with the admission permit, exactly once
// however the call ends.
//
// Refusals never close the connection: admission and capacity refusals
// answer ResourceExhausted with a reason, a stopping server answers
// Unavailable. Any protocol violation closes the connection.
package server
