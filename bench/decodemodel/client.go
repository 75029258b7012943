package decodemodel

import (
	"errors"
	"net"
	"sync"
)

// The low 22 bits of a call id are the caller's sequence number, the high
// 10 its slot on the connection (so a response finds its caller without a
// map).
const (
	seqBits  = 22
	maxSlots = 1 << (32 - seqBits)
)

var errClosed = errors.New("decodemodel: connection closed")

// clientConn is one client connection shared by up to maxSlots callers,
// each with at most one call in flight.
type clientConn struct {
	c       net.Conn
	wmu     sync.Mutex
	waiters [maxSlots]chan byte // slot -> its response status
	done    chan struct{}       // closed when the response reader ends
}

func dial(addr string) (*clientConn, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	cc := &clientConn{c: c, done: make(chan struct{})}
	for i := range cc.waiters {
		cc.waiters[i] = make(chan byte, 1)
	}
	go cc.readResponses()
	return cc, nil
}

func (cc *clientConn) readResponses() {
	defer close(cc.done)
	fr := newFrameReader(cc.c)
	for {
		typ, id, body, err := fr.next()
		if err != nil || typ != frameResponse || len(body) != 1 {
			return
		}
		select {
		case cc.waiters[id>>seqBits] <- body[0]:
		default: // a response nobody waits for: a harness bug
			panic("decodemodel: unexpected response")
		}
	}
}

// send writes one Request frame.
func (cc *clientConn) send(id uint32, cancellable bool, body []byte) error {
	typ := frameRequest
	if cancellable {
		typ = frameRequestCancellable
	}
	var h [headerLen]byte
	putHeader(h[:], typ, id, len(body))
	cc.wmu.Lock()
	defer cc.wmu.Unlock()
	bufs := net.Buffers{h[:], body}
	_, err := bufs.WriteTo(cc.c)
	return err
}

// sendCancel writes one Cancel frame.
func (cc *clientConn) sendCancel(id uint32) error {
	var h [headerLen]byte
	putHeader(h[:], frameCancel, id, 0)
	cc.wmu.Lock()
	defer cc.wmu.Unlock()
	_, err := cc.c.Write(h[:])
	return err
}

// wait returns the status of slot's call in flight.
func (cc *clientConn) wait(slot int) (byte, error) {
	select {
	case st := <-cc.waiters[slot]:
		return st, nil
	case <-cc.done:
		select {
		case st := <-cc.waiters[slot]:
			return st, nil
		default:
			return 0, errClosed
		}
	}
}

func (cc *clientConn) close() {
	cc.c.Close()
	<-cc.done
}
