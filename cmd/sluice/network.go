package main

import (
	"context"
	"net"
)

// The network of "sluice serve", "sluice call" and the demo: TCP, unless a
// test puts them on an in-memory network, where they can run on
// testing/synctest's clock.
var (
	listen = func(addr string) (net.Listener, error) { return net.Listen("tcp", addr) }
	// dialer is the client's Options.Dialer; nil dials TCP.
	dialer func(ctx context.Context, addr string) (net.Conn, error)
)
