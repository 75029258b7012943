package server

import (
	"errors"

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
	codec := c.codecs[id-1]
	cp := c.s.comp.Load()
	if _, _, ok := cp.res.Lookup(codec.Name()); !ok {
		return nil, status.Errorf(protocol.CodeInvalidArgument, "compressed stream message: profile %q is no longer accepted by this server (its compression configuration changed after this connection's handshake)", codec.Name())
	}
	if err := cp.res.CheckDeclared(uint64(declared), compressedLen); err != nil {
		return nil, status.Errorf(protocol.CodeResourceExhausted, "compressed stream message: %v", err)
	}
	return codec, nil
}

// decode decodes m for Receive. s.dec holds the decoded bytes of the
// message Receive returned last; the caller gave them back.
func (s *Stream) decode(m *streamMsg) ([]byte, error) {
	if m.err != nil {
		return nil, m.err
	}
	out, err := s.c.s.governedDecode(s.ctx, &s.dec, m.codec, s.decoded[:0], m.b, int(m.declared))
	if out != nil {
		s.decoded = out[:0]
	}
	var waited errDecodeWait
	switch {
	case errors.Is(err, errDecodedBudget):
		return nil, status.Errorf(protocol.CodeResourceExhausted, "%v (%s)", errDecodedBudget, ReasonDecodedBytes)
	case errors.As(err, &waited):
		return nil, waited.err
	case err != nil:
		if e := s.ctx.Err(); e != nil {
			return nil, e
		}
		return nil, status.Errorf(protocol.CodeInvalidArgument, "compressed stream message: %v", err)
	}
	return out, nil
}
