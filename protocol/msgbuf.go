package protocol

import (
	"math/bits"
	"sync"
)

// Message buffers: a receiver keeps each queued stream message in a
// buffer of its own (memory follows bytes received: at most twice the
// message, at least minMsgBuf) until its consumer is done with it, then
// gives the buffer back here, so that a stream's steady state allocates
// nothing per message.

const (
	minMsgBufShift = 6  // 64 B
	maxMsgBufShift = 20 // 1 MiB: larger messages get exact, unpooled buffers
	msgBufClasses  = maxMsgBufShift - minMsgBufShift + 1
)

var msgBufs [msgBufClasses]sync.Pool

// msgBufClass is the pool class of a buffer of capacity at least n: the
// smallest power of two not below n, from 64 B; -1 above 1 MiB.
func msgBufClass(n int) int {
	if n <= 1<<minMsgBufShift {
		return 0
	}
	c := bits.Len(uint(n-1)) - minMsgBufShift
	if c >= msgBufClasses {
		return -1
	}
	return c
}

// GetMessageBuffer returns a buffer holding a copy of b, pooled when b is
// at most 1 MiB. Give it back with [PutMessageBuffer] once nothing refers
// to its bytes.
func GetMessageBuffer(b []byte) *[]byte {
	c := msgBufClass(len(b))
	if c < 0 {
		p := make([]byte, len(b))
		copy(p, b)
		return &p
	}
	if v := msgBufs[c].Get(); v != nil {
		p := v.(*[]byte)
		*p = append((*p)[:0], b...)
		return p
	}
	p := make([]byte, len(b), 1<<(c+minMsgBufShift))
	copy(p, b)
	return &p
}

// PutMessageBuffer gives back a buffer from [GetMessageBuffer]; nil is
// ignored. The caller must not use it afterwards.
func PutMessageBuffer(p *[]byte) {
	if p == nil {
		return
	}
	n := cap(*p)
	c := msgBufClass(n)
	if c < 0 || n != 1<<(c+minMsgBufShift) {
		return // not one of ours: unpooled
	}
	*p = (*p)[:0]
	msgBufs[c].Put(p)
}
