package server

import (
	"github.com/sluicerpc/sluice/codecs"
	"github.com/sluicerpc/sluice/spi"
)

// compression is the compression configuration in force: what the server
// accepts, its decode bounds, and each method's response policy (by
// method.pos). It is immutable; SetCompression replaces it with one
// atomic store, and the request path loads it once per use.
type compression struct {
	config   codecs.Config // as given, for Compression()
	res      *codecs.Resolved
	policies []codecs.Policy
}

// newCompression resolves c for the server's methods.
func (s *Server) newCompression(c codecs.Config) (*compression, error) {
	res, err := resolveCompression(c, s.o.Limits)
	if err != nil {
		return nil, err
	}
	cp := &compression{config: c, res: res, policies: make([]codecs.Policy, s.nmethods)}
	for _, ms := range s.methods {
		for i := range ms {
			cp.policies[ms[i].pos] = res.Policy(ms[i].full)
		}
	}
	return cp, nil
}

// respCodec is the codec a response of a call on c is compressed with
// under cp, and its id: the connection's, unless this configuration no
// longer accepts its profile (then nil: responses go uncompressed).
func (cp *compression) respCodec(c *conn) (spi.Codec, uint8) {
	if c.respCodec == nil {
		return nil, 0
	}
	if _, _, ok := cp.res.Lookup(c.respCodec.Name()); !ok {
		return nil, 0
	}
	return c.respCodec, c.respCodecID
}

// SetCompression changes what the server accepts and answers with, live
// (codecs.Config, as Options.Compression; an invalid one changes nothing
// and returns an error naming its field). It applies from the next use:
// the response policy to every response and stream message compressed
// after it, the decode bounds to every compressed request or message
// checked after it. A connection keeps the profiles its handshake
// negotiated, and is told nothing: a profile the new configuration no
// longer accepts is refused on each request that uses it
// (InvalidArgument) and no longer compresses its responses, so turning a
// codec off takes effect at once on every connection. Connections that
// handshake afterwards negotiate from the new list.
func (s *Server) SetCompression(c codecs.Config) error {
	cp, err := s.newCompression(c)
	if err != nil {
		return err
	}
	s.setMu.Lock()
	defer s.setMu.Unlock()
	s.comp.Store(cp)
	return nil
}

// Compression returns the compression configuration in force, as last
// given to New or SetCompression.
func (s *Server) Compression() codecs.Config { return s.comp.Load().config }

// SetStreamWindow changes Options.StreamWindow live: the window a stream
// is grown to when its handler starts, for streams whose handler starts
// after it (0 selects the default; out of range changes nothing and
// returns an error). Running streams keep their window.
func (s *Server) SetStreamWindow(n int) error {
	w, err := resolveStreamWindow(n)
	if err != nil {
		return err
	}
	s.setMu.Lock()
	defer s.setMu.Unlock()
	s.streamWindow.Store(int64(w))
	return nil
}

// StreamWindow returns the stream window in force, default filled in.
func (s *Server) StreamWindow() int { return int(s.streamWindow.Load()) }
