package protocol

// IDSequence enforces the request id rule on the receiving side: ids are
// non-zero and strictly increasing per connection (a client starts at 1).
// GoAway's last accepted id relies on it. The zero value is ready to use.
// It is not safe for concurrent use; the connection's read loop owns it.
type IDSequence struct {
	last uint64
}

// Accept records id if it is non-zero and greater than every id accepted
// before; otherwise it returns a [*ProtocolError] and records nothing.
func (s *IDSequence) Accept(id uint64) error {
	if id == 0 {
		return violation("request id 0")
	}
	if id <= s.last {
		return violation("request id %d not greater than previous id %d", id, s.last)
	}
	s.last = id
	return nil
}

// Last returns the highest accepted id, or 0 if none.
func (s *IDSequence) Last() uint64 { return s.last }
