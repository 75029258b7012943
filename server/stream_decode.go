package server

import (
	"fmt"

	"github.com/sluicerpc/sluice/codecs"
	"github.com/sluicerpc/sluice/kernel/governor"
	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/protocol/status"
	"github.com/sluicerpc/sluice/spi"
)

// Compressed stream messages (docs/streaming.md): the reader keeps a
// compressed message in its compressed form (its flow-control charge is
// its declared length, so the window bounds what it decodes to); Receive
// decodes it after admission, under the governor: the decoded-bytes
// budget for its declared length (held until the next Receive, as long
// as the message is valid, or the stream's end) and a decode credit,
// with the declared length as the exact limit.

// streamCodec checks a compressed message's envelope on the reader: the
// codec id names a profile of this connection and the declared length is
// within the decode bounds. It returns the codec, or the error Receive
// will return for the message.
func (c *conn) streamCodec(id uint8, declared uint32, compressedLen int) (spi.Codec, error) {
	if id == 0 || int(id) > len(c.codecs) {
		return nil, status.Errorf(protocol.CodeInvalidArgument, "compressed stream message: unknown codec id %d (this connection negotiated %d profiles)", id, len(c.codecs))
	}
	if err := c.s.comp.CheckDeclared(uint64(declared), compressedLen); err != nil {
		return nil, status.Errorf(protocol.CodeResourceExhausted, "compressed stream message: %v", err)
	}
	return c.codecs[id-1], nil
}

// decode decodes m for Receive. s.dec holds the decoded bytes of the
// message Receive returned last; the caller gave them back.
func (s *Stream) decode(m *streamMsg) ([]byte, error) {
	if m.err != nil {
		return nil, m.err
	}
	srv := s.c.s
	g, declared := srv.governor, int(m.n)
	if declared > 0 && !s.dec.Take(g, governor.PartDecoded, int64(declared)) {
		return nil, status.Errorf(protocol.CodeResourceExhausted, "server busy: the decoded bytes budget is full (%s)", ReasonDecodedBytes)
	}
	if err := s.dec.Wait(s.ctx, g, governor.PartDecode, 1); err != nil {
		return nil, err
	}
	srv.stats.decompressions.Add(1)
	out, err := codecs.Decompress(s.ctx, m.codec, s.decoded[:0], m.b, declared)
	s.dec.Give(governor.PartDecode, 1)
	if out != nil {
		s.decoded = out[:0]
	}
	if err == nil && len(out) != declared {
		err = fmt.Errorf("%w: decoded to %d bytes, declared %d", spi.ErrCorrupt, len(out), declared)
	}
	if err != nil {
		srv.stats.decodeFailures.Add(1)
		if e := s.ctx.Err(); e != nil {
			return nil, e
		}
		return nil, status.Errorf(protocol.CodeInvalidArgument, "compressed stream message: %v", err)
	}
	srv.stats.decodedBytes.Add(uint64(len(out)))
	return out, nil
}
