package client_test

import (
	"bytes"
	"context"
	"net"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/codecs"
	"github.com/sluicerpc/sluice/protocol"
)

// codecPeer is a scripted server over TCP loopback for the compression
// tests, which must not depend on the real server's compression: its
// HandshakeAck accepts the profiles it is given (in that order, as they
// are, duplicates included), it records every Handshake and Request it
// receives, and it answers each request with the frame respond appends.
// Its method table is svc/M and svc/N.
type codecPeer struct {
	addr string
	cfg  peerConfig

	mu    sync.Mutex
	hello []protocol.Handshake
	reqs  []peerRequest
	conns int
	wg    sync.WaitGroup
}

type peerConfig struct {
	accept []string // the ack's Codecs
	// acceptByConn, when set, is the ack's Codecs on the n-th connection
	// (the last entry for the later ones), instead of accept.
	acceptByConn [][]string
	maxFrame     uint32 // the ack's MaxFrameSize (default 1 MiB)
	// respond appends the answer to the request with id to dst; nil
	// answers a unary request with its own body, uncompressed, or, when
	// the request was compressed, with an empty body. One-way requests
	// are never answered.
	respond func(dst []byte, conn int, id uint64, req *protocol.Request) []byte
	// noRecord keeps the requests' bodies out of the record (the
	// allocation test).
	noRecord bool
}

// peerRequest is a request as the peer received it.
type peerRequest struct {
	conn       int
	method     uint16
	oneWay     bool
	compressed bool
	codecID    uint8
	origLen    uint32
	body       []byte // the wire body: compressed bytes when compressed
}

func startCodecPeer(t testing.TB, cfg peerConfig) *codecPeer {
	t.Helper()
	if cfg.maxFrame == 0 {
		cfg.maxFrame = 1 << 20
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &codecPeer{addr: l.Addr().String(), cfg: cfg}
	p.wg.Go(func() { p.accept(l) })
	t.Cleanup(func() {
		_ = l.Close()
		p.wg.Wait()
	})
	return p
}

func (p *codecPeer) accept(l net.Listener) {
	var open []net.Conn
	defer func() {
		for _, nc := range open {
			_ = nc.Close()
		}
	}()
	for {
		nc, err := l.Accept()
		if err != nil {
			return
		}
		open = append(open, nc)
		p.mu.Lock()
		n := p.conns
		p.conns++
		p.mu.Unlock()
		p.wg.Go(func() { p.serve(n, nc) })
	}
}

func (p *codecPeer) serve(n int, nc net.Conn) {
	defer nc.Close()
	lim := protocol.DefaultLimits()
	lim.MaxFrameSize = p.cfg.maxFrame
	rd := protocol.NewReader(nc, lim)
	h, payload, err := rd.ReadFrame()
	if err != nil || h.Type != protocol.FrameHandshake {
		return
	}
	var hs protocol.Handshake
	if protocol.ParseHandshake(h, payload, lim, &hs) != nil {
		return
	}
	p.mu.Lock()
	p.hello = append(p.hello, hs)
	p.mu.Unlock()
	accept := p.cfg.accept
	if bc := p.cfg.acceptByConn; len(bc) > 0 {
		accept = bc[min(n, len(bc)-1)]
	}
	ack, err := protocol.AppendHandshakeAck(nil, &protocol.HandshakeAck{
		Version: protocol.Version, Capabilities: protocol.CapCancel | protocol.CapOneWay | protocol.CapCompression,
		MaxFrameSize: p.cfg.maxFrame, MaxMetadataBytes: 1024,
		Codecs:   accept,
		Services: []protocol.ServiceInfo{{Name: "svc", Methods: []string{"M", "N"}}},
	})
	if err != nil {
		panic(err)
	}
	if _, err := nc.Write(ack); err != nil {
		return
	}
	var req protocol.Request
	var out []byte
	for {
		h, payload, err := rd.ReadFrame()
		if err != nil {
			return
		}
		if h.Type != protocol.FrameRequest {
			continue
		}
		if err := protocol.ParseRequest(h, payload, lim, &req); err != nil {
			return
		}
		if !p.cfg.noRecord {
			p.mu.Lock()
			p.reqs = append(p.reqs, peerRequest{
				conn: n, method: req.Method, oneWay: req.OneWay,
				compressed: req.Compressed, codecID: req.CodecID, origLen: req.OriginalLength,
				body: bytes.Clone(req.Body),
			})
			p.mu.Unlock()
		}
		if req.OneWay {
			continue
		}
		switch {
		case p.cfg.respond != nil:
			out = p.cfg.respond(out[:0], n, h.ID, &req)
		case req.Compressed:
			out, _ = protocol.AppendResponse(out[:0], h.ID, &protocol.Response{})
		default:
			out, _ = protocol.AppendResponse(out[:0], h.ID, &protocol.Response{Body: req.Body})
		}
		if len(out) > 0 {
			if _, err := nc.Write(out); err != nil {
				return
			}
		}
	}
}

func (p *codecPeer) handshakes() []protocol.Handshake {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]protocol.Handshake(nil), p.hello...)
}

func (p *codecPeer) requests() []peerRequest {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]peerRequest(nil), p.reqs...)
}

func (p *codecPeer) connections() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.conns
}

// last is the last request the peer received.
func (p *codecPeer) last(t testing.TB) peerRequest {
	t.Helper()
	reqs := p.requests()
	require.NotEmpty(t, reqs, "the peer received no request")
	return reqs[len(reqs)-1]
}

// decoded is the body the request carried: decoded with the codec its id
// names in accepted when compressed (and exactly its original length).
func (r peerRequest) decoded(t testing.TB, accepted []string) []byte {
	t.Helper()
	if !r.compressed {
		return r.body
	}
	require.NotZero(t, r.codecID)
	require.LessOrEqual(t, int(r.codecID), len(accepted), "codec id beyond the ack's list")
	c, ok := codecs.ByName(accepted[r.codecID-1])
	require.True(t, ok, "no codec named %q", accepted[r.codecID-1])
	out, err := c.Decompress(context.Background(), nil, r.body, int(r.origLen))
	require.NoError(t, err)
	require.Len(t, out, int(r.origLen))
	return out
}

// appendCompressed appends a Response frame whose body is data, compressed
// with codec id codecID and declaring declared decoded bytes.
func appendCompressed(dst []byte, id uint64, codecID uint8, declared uint32, data []byte) []byte {
	out, err := protocol.AppendResponse(dst, id, &protocol.Response{Body: data, Compressed: true, CodecID: codecID, OriginalLength: declared})
	if err != nil {
		panic(err)
	}
	return out
}

// echo appends the uncompressed answer to req carrying its own body.
func echo(dst []byte, id uint64, req *protocol.Request) []byte {
	out, _ := protocol.AppendResponse(dst, id, &protocol.Response{Body: req.Body})
	return out
}
