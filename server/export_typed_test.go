package server

// SendBuffer returns the buffer a typed server stream encodes its next
// message into (for the tests that check it is reused).
func SendBuffer[Resp any](s *ServerStream[Resp]) []byte { return s.out.buf }

// BidiSendBuffer is SendBuffer for a bidirectional stream.
func BidiSendBuffer[Req, Resp any](s *BidiStream[Req, Resp]) []byte { return s.out.buf }
