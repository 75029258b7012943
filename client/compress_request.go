package client

import (
	"math"

	"github.com/sluicerpc/sluice/codecs"
)

// setBody sets cl.req's body to body, compressed with cn's send codec
// (negotiate) when the call's policy (cl.policy) finds it worth it: at
// least MinSize bytes, and a compressed form that saves MinSaving bytes
// and MinSavingPercent percent. Unary and one-way requests are treated
// alike.
//
// The compressed form goes into the call's pooled buffer cl.zbuf, whose
// capacity is the policy's budget for body (the codec is given exactly
// that room, so a form that would not save enough does not fit), or the
// server's maximum frame size when that is smaller: a body too large to
// send as it is can still go compressed, and the buffer never exceeds
// what a frame can carry. It is kept for the call's next attempts: an
// attempt on a connection that sends with the same codec within the same
// room reuses it (no second compression, never a compression of the
// compressed form); another codec compresses body again. In steady state
// (a pooled call whose buffer has room) it allocates nothing.
func (cl *call) setBody(cn *conn, body []byte) {
	cl.req.Body = body
	w := &cn.codecs
	if w.send == nil || uint64(len(body)) > math.MaxUint32 {
		return
	}
	budget := cl.policy.Budget(len(body)) // -1: not to be compressed
	room := budget
	if room > 0 && uint64(room) > uint64(cn.peerMaxFrame) {
		room = int(cn.peerMaxFrame)
	}
	if cl.zidx != w.sendIdx+1 || cl.zroom != room {
		cl.zidx, cl.zroom, cl.zok = w.sendIdx+1, room, false
		if room <= 0 {
			return // below MinSize, or nothing could save enough
		}
		if cap(cl.zbuf) < room {
			cl.zbuf = make([]byte, 0, room)
		}
		if room < budget {
			// A frame's bound is stricter than the policy's budget: a
			// form that fits saves more than the policy asks.
			out, fits, err := codecs.Compress(w.send, cl.zbuf[:0:room], body)
			if cl.zok = fits && err == nil && len(out) <= room; cl.zok {
				cl.zbuf = cl.zbuf[:len(out)] // out is cl.zbuf's own array
			}
		} else {
			cl.zbuf, cl.zok = cl.policy.Compress(w.send, cl.zbuf[:0], body)
		}
	}
	if cl.zok {
		cl.req.Body = cl.zbuf
		cl.req.Compressed, cl.req.CodecID, cl.req.OriginalLength = true, w.sendID, uint32(len(body))
	}
}
