package server

import (
	"math"
	"slices"

	"github.com/sluicerpc/sluice/protocol"
)

// respond writes the Response frame of a call whose response carries
// metadata or may be compressed (its client offered a profile this server
// accepts): out holds header room and the body. The body is compressed
// with the connection's response codec when the method's policy finds it
// worth it (codecs.Policy: at least MinSize bytes, saving enough), into
// the call's pooled buffer; otherwise it is sent as it is. The call's
// metrics are recorded before its answer is written.
func (cl *call) respond(out []byte) {
	c := cl.c
	body := out[protocol.HeaderSize:]
	resp := protocol.Response{Metadata: cl.md.resp, Body: body}
	if c.respCodec != nil && len(body) <= math.MaxUint32 {
		cp := c.s.comp.Load()
		p := &cp.policies[cl.m.pos]
		if budget := p.Budget(len(body)); budget > 0 {
			if codec, id := cp.respCodec(c); codec != nil {
				cl.zout = slices.Grow(cl.zout[:0], budget)
				if z, ok := p.Compress(codec, cl.zout[:0], body); ok {
					cl.zout = z
					resp.Body, resp.Compressed, resp.CodecID, resp.OriginalLength = z, true, id, uint32(len(body))
					c.s.stats.compressedResponses.Add(1)
					c.s.stats.compressedOut.Add(uint64(len(z)))
					c.s.stats.uncompressedOut.Add(uint64(len(body)))
				}
			}
		}
	}
	frame, err := protocol.AppendResponse(cl.md.frame[:0], cl.id, &resp)
	if err != nil {
		f := protocol.ErrorFrame{Code: protocol.CodeInternal, Message: clip("encoding the response: " + err.Error())}
		c.writeError(cl.id, &f)
		cl.observe(f.Code, -1)
		return
	}
	cl.md.frame = frame
	if uint64(len(frame)-protocol.HeaderSize) > uint64(c.peerMax) {
		f := protocol.ErrorFrame{Code: protocol.CodeResourceExhausted, Message: "the response exceeds the client's maximum frame size"}
		c.writeError(cl.id, &f)
		cl.observe(f.Code, -1)
		return
	}
	_ = c.w.Write(frame)
	cl.observe(protocol.CodeOK, len(body))
}
