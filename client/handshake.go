package client

import (
	"context"
	"crypto/tls"
	"net"
	"time"

	"github.com/sluicerpc/sluice/protocol"
)

// connect opens a connection to ep: TCP (or Options.Dialer), TLS when
// configured, then the protocol handshake (Handshake, then HandshakeAck or
// a connection-level Error), all bounded by ctx. The returned connection
// is ready for calls but its reader is not started yet (Client.track
// starts it).
func (c *Client) connect(ctx context.Context, ep *endpoint) (*conn, error) {
	var nc net.Conn
	var err error
	ep.setStage(stageTCP)
	if dial := c.cfg.Dialer; dial != nil {
		nc, err = dial(ctx, ep.addr)
	} else {
		var d net.Dialer
		nc, err = d.DialContext(ctx, "tcp", ep.addr)
	}
	if err != nil {
		return nil, c.connectFailure(ctx, stageTCP, err)
	}
	cn, err := c.handshake(ctx, ep, nc)
	if err != nil {
		_ = nc.Close()
		return nil, err
	}
	return cn, nil
}

func (c *Client) handshake(ctx context.Context, ep *endpoint, nc net.Conn) (*conn, error) {
	// ctx bounds the whole exchange: its deadline as the socket deadline,
	// its cancellation (Close, Dial's ctx) by expiring the socket at once.
	if dl, ok := ctx.Deadline(); ok {
		_ = nc.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { _ = nc.SetDeadline(time.Unix(1, 0)) })
	defer stop()

	if cfg := c.cfg.TLS; cfg != nil {
		if cfg.ServerName == "" && !cfg.InsecureSkipVerify {
			cfg = cfg.Clone()
			if host, _, err := net.SplitHostPort(ep.addr); err == nil {
				cfg.ServerName = host
			}
		}
		ep.setStage(stageTLS)
		tc := tls.Client(nc, cfg)
		if err := tc.HandshakeContext(ctx); err != nil {
			return nil, c.connectFailure(ctx, stageTLS, err)
		}
		nc = tc
	}

	lim := c.cfg.limits()
	hs := protocol.Handshake{
		Version:      protocol.Version,
		Capabilities: protocol.CapCancel | protocol.CapOneWay | protocol.CapKeepalive | protocol.CapStreaming,
		MaxFrameSize: c.cfg.MaxFrameSize,
		Auth:         c.cfg.Auth,
		Codecs:       c.cfg.offer,
	}
	if len(c.cfg.offer) > 0 {
		hs.Capabilities |= protocol.CapCompression
	}
	frame, err := protocol.AppendHandshake(nil, &hs)
	if err != nil {
		return nil, &connectError{"encoding the handshake: " + violationText(err), err}
	}
	ep.setStage(stageHandshake)
	if _, err := nc.Write(frame); err != nil {
		return nil, c.connectFailure(ctx, stageHandshake, err)
	}
	ep.setStage(stageAnswer)
	rd := protocol.NewReader(nc, lim)
	// The answer is bounded like the server bounds the Handshake: a
	// HandshakeAck (or a refusal) of at most MaxHandshakeAckSize, not a
	// frame of the connection's full maximum size.
	rd.SetMaxFrameSize(protocol.MaxHandshakeAckSize(lim))
	h, payload, err := rd.ReadFrame()
	if err != nil {
		if looksLikeTLS(err) && c.cfg.TLS == nil {
			return nil, &connectError{"the server's answer is not a sluice frame: it probably speaks TLS (this client uses plaintext), or another protocol", err}
		}
		return nil, c.connectFailure(ctx, stageAnswer, err)
	}
	var ack protocol.HandshakeAck
	switch {
	case h.Type == protocol.FrameError && h.ID == 0:
		var f protocol.ErrorFrame
		if err := protocol.ParseError(h, payload, lim, &f); err != nil {
			return nil, &connectError{"the server's handshake refusal is malformed: " + violationText(err), err}
		}
		st := statusOf(&f)
		return nil, &connectError{"the server refused the handshake: " + statusText(st), st}
	case h.Type != protocol.FrameHandshakeAck:
		return nil, &connectError{"the server answered the handshake with a " + h.Type.String() + " frame instead of its acknowledgement", &protocol.ProtocolError{Reason: "the server answered the handshake with " + h.Type.String()}}
	}
	if err := protocol.ParseHandshakeAck(h, payload, &ack); err != nil {
		return nil, &connectError{"the server's handshake answer is malformed: " + violationText(err), err}
	}
	if ctx.Err() != nil || !stop() {
		return nil, c.connectFailure(ctx, stageAnswer, context.Cause(ctx))
	}
	if err := nc.SetDeadline(time.Time{}); err != nil {
		return nil, err
	}
	rd.SetMaxFrameSize(lim.MaxFrameSize)

	cn := &conn{
		client:          c,
		ep:              ep,
		nc:              nc,
		rd:              rd,
		lim:             lim,
		caps:            ack.Capabilities,
		peerMaxFrame:    ack.MaxFrameSize,
		peerMaxMetadata: ack.MaxMetadataBytes,
		codecs:          negotiate(c.cfg.comp, ack.Codecs),
		routes:          make(map[string]route),
		calls:           make(map[uint64]*call),
		streams:         make(map[uint64]*Stream),
		sendTurn:        make(chan struct{}, 1),
		streaming:       ack.Capabilities.Has(protocol.CapStreaming),
	}
	cn.sendWin.Init(protocol.InitialConnWindow, protocol.MaxWindow)
	cn.recvWin.Init(protocol.InitialConnWindow, protocol.MaxWindow)
	for si, svc := range ack.Services {
		for mi, m := range svc.Methods {
			cn.routes[svc.Name+"/"+m] = route{service: uint16(si), method: uint16(mi)}
		}
	}
	cn.w = protocol.NewWriterConfig(nc, protocol.WriterConfig{
		BufferSize:   c.cfg.WriteBufferSize,
		WriteTimeout: max(c.cfg.WriteTimeout, 0),
		OnError: func(err error) {
			cn.close(unavailable("connection to " + cn.ep.addr + " failed: writing to the server: " + describe(err)))
		},
	})
	cn.usable.Store(true)
	return cn, nil
}
