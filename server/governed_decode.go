package server

import (
	"context"
	"errors"
	"fmt"

	"github.com/sluicerpc/sluice/codecs"
	"github.com/sluicerpc/sluice/kernel/governor"
	"github.com/sluicerpc/sluice/spi"
)

// errDecodedBudget is governedDecode's refusal when the decoded-bytes
// budget cannot hold the declared length.
var errDecodedBudget = errors.New("server busy: the decoded bytes budget is full")

// errDecodeWait wraps the context's end while waiting for a decode credit
// (nothing was decoded).
type errDecodeWait struct{ err error }

func (e errDecodeWait) Error() string { return e.err.Error() }
func (e errDecodeWait) Unwrap() error { return e.err }

// governedDecode is the one decode step of a compressed body, request or
// stream message: it takes the declared length from the decoded-bytes
// budget into h (held by h's owner until it gives it back or releases),
// waits for a decode credit in arrival order while ctx lives (a large
// decode first for its place among the large ones: Governor.Large), decodes src
// with codec into dst with the declared length as the exact limit (a
// panic contained by codecs.Decompress), and gives the credit back. The
// stats count the decode, its failure and its bytes. It returns the
// decoded body, errDecodedBudget, an errDecodeWait, or the decode's error
// (another length than declared is spi.ErrCorrupt); out is dst's buffer
// (possibly grown) in every case, for the caller to keep for reuse.
func (s *Server) governedDecode(ctx context.Context, h *governor.Holding, codec spi.Codec, dst, src []byte, declared int) (out []byte, err error) {
	if declared > 0 && !h.Take(s.governor, governor.PartDecoded, int64(declared)) {
		return dst, errDecodedBudget
	}
	large := declared > governor.LargeDecode
	if large {
		// A place among the large decodes first: they never take the
		// last credit, which stays for small decodes (Governor.Large).
		if err := h.Wait(ctx, s.governor, governor.PartLargeDecode, 1); err != nil {
			return dst, errDecodeWait{err}
		}
	}
	if err := h.Wait(ctx, s.governor, governor.PartDecode, 1); err != nil {
		if large {
			h.Give(governor.PartLargeDecode, 1)
		}
		return dst, errDecodeWait{err}
	}
	if hk := s.hooks.Load(); hk != nil && hk.beforeDecode != nil {
		hk.beforeDecode(ctx)
	}
	s.stats.decompressions.Add(1)
	s.stats.compressedIn.Add(uint64(len(src)))
	out, err = codecs.Decompress(ctx, codec, dst, src, declared)
	h.Give(governor.PartDecode, 1)
	if large {
		h.Give(governor.PartLargeDecode, 1)
	}
	if err == nil && len(out) != declared {
		err = fmt.Errorf("%w: decoded to %d bytes, declared %d", spi.ErrCorrupt, len(out), declared)
	}
	if err != nil {
		s.stats.decodeFailures.Add(1)
		return out, err
	}
	s.stats.decodedBytes.Add(uint64(len(out)))
	return out, nil
}
