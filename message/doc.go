// Package message turns typed request and response messages into call
// bodies and back, for the typed handlers of package server and the typed
// calls of package client.
//
// A Codec is chosen per method, at registration; the bytes it produces are
// the call's body, which the wire protocol carries opaquely (compression is
// a separate, later step). JSON is here; protobuf (google.golang.org/protobuf)
// is in package protomsg, so that JSON users do not link protobuf.
package message
