package server

import (
	"math"
	"slices"

	"github.com/sluicerpc/sluice/protocol"
)

// compress sets m's body to msg, compressed with the connection's
// response codec when the method's response policy finds it worth it
// (codecs.Policy: at least MinSize bytes, saving enough), exactly as
// respond does for a unary response; otherwise to msg as it is. The
// compressed form goes into s.zbuf, which the stream reuses for every
// message (a steady stream allocates nothing here) and which m.Body
// aliases until the next call. It reports whether m is compressed.
//
// It runs under sendMu (s.cl is valid, zbuf is the sender's).
func (s *Stream) compress(m *protocol.Message, msg []byte) bool {
	m.Body = msg
	c := s.c
	if c.respCodec == nil || len(msg) > math.MaxUint32 {
		return false
	}
	cp := c.s.comp.Load()
	p := &cp.policies[s.cl.m.pos]
	budget := p.Budget(len(msg))
	if budget <= 0 {
		return false
	}
	codec, id := cp.respCodec(c)
	if codec == nil {
		return false
	}
	s.zbuf = slices.Grow(s.zbuf[:0], budget)
	z, ok := p.Compress(codec, s.zbuf[:0], msg)
	if !ok {
		return false
	}
	s.zbuf = z
	m.Body, m.Compressed, m.CodecID, m.OriginalLength = z, true, id, uint32(len(msg))
	return true
}
