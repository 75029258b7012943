package servertest

import (
	"context"
	"fmt"
	"net"
	"sync"
	"syscall"
)

// Network is an in-memory network for servers and clients in one test
// process: its listeners accept net.Pipe connections that its Dial makes.
// Unlike loopback sockets it suits a testing/synctest bubble: a goroutine
// blocked on one of its connections (or in Accept, or in Dial) is durably
// blocked, so the bubble's fake clock advances while servers and clients
// wait for each other, and timeouts, keepalives and backoffs run on it.
// Make the Network, its listeners and its connections inside the bubble.
//
// Its addresses are plain names; a client uses them as endpoints with
// Dial as its Options.Dialer.
type Network struct {
	mu        sync.Mutex
	listeners map[string]*pipeListener
	next      int
}

// NewNetwork returns an empty network.
func NewNetwork() *Network { return &Network{listeners: make(map[string]*pipeListener)} }

// Listen listens at addr, or at a new address ("pipe-1", "pipe-2", ...)
// when addr is empty. An address is free again once its listener is
// closed.
func (n *Network) Listen(addr string) (net.Listener, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if addr == "" {
		n.next++
		addr = fmt.Sprintf("pipe-%d", n.next)
	}
	if _, ok := n.listeners[addr]; ok {
		return nil, &net.OpError{Op: "listen", Net: "pipe", Addr: pipeAddr(addr), Err: syscall.EADDRINUSE}
	}
	l := &pipeListener{n: n, addr: pipeAddr(addr), conns: make(chan net.Conn), closed: make(chan struct{})}
	n.listeners[addr] = l
	return l, nil
}

// Dial connects to the listener at addr: it returns the client end of a
// new net.Pipe once Accept took the other end. With no listener at addr it
// fails at once, as a dial to a closed port does (connection refused); it
// also fails when the listener closes or ctx ends first.
func (n *Network) Dial(ctx context.Context, addr string) (net.Conn, error) {
	n.mu.Lock()
	l := n.listeners[addr]
	n.mu.Unlock()
	refused := &net.OpError{Op: "dial", Net: "pipe", Addr: pipeAddr(addr), Err: syscall.ECONNREFUSED}
	if l == nil {
		return nil, refused
	}
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.closed:
	case <-ctx.Done():
		refused.Err = ctx.Err()
	}
	_ = client.Close()
	_ = server.Close()
	return nil, refused
}

type pipeListener struct {
	n      *Network
	addr   pipeAddr
	conns  chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.closed:
		return nil, &net.OpError{Op: "accept", Net: "pipe", Addr: l.addr, Err: net.ErrClosed}
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() {
		close(l.closed)
		l.n.mu.Lock()
		if l.n.listeners[string(l.addr)] == l {
			delete(l.n.listeners, string(l.addr))
		}
		l.n.mu.Unlock()
	})
	return nil
}

func (l *pipeListener) Addr() net.Addr { return l.addr }

type pipeAddr string

func (pipeAddr) Network() string  { return "pipe" }
func (a pipeAddr) String() string { return string(a) }
