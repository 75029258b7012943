package client

// TypedSendBuffer returns the buffer a typed bidi stream encodes its next
// message into (for the tests that check it is reused).
func TypedSendBuffer[Req, Resp any](s *BidiStream[Req, Resp]) []byte { return s.out.buf }
