package client_test

import (
	"bytes"
	"encoding/binary"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/client"
	"github.com/sluicerpc/sluice/protocol"
)

// answeringServer accepts connections, reads each one's Handshake and
// writes answer, then holds the connection until the test ends; it
// returns its address and the bytes each connection sent it.
func answeringServer(t *testing.T, answer []byte) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	done := make(chan struct{})
	t.Cleanup(func() { close(done); _ = l.Close() })
	go func() {
		for {
			nc, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer nc.Close()
				rd := protocol.NewReader(nc, protocol.DefaultLimits())
				if h, _, err := rd.ReadFrame(); err != nil || h.Type != protocol.FrameHandshake {
					return
				}
				_, _ = nc.Write(answer)
				<-done
			}()
		}
	}()
	return l.Addr().String()
}

// rawAck is a HandshakeAck frame with one service of methods methods,
// written by hand: AppendHandshakeAck refuses a table above
// protocol.MaxAckEntries.
func rawAck(methods int) []byte {
	var p []byte
	p = binary.LittleEndian.AppendUint16(p, protocol.Version)
	for _, v := range []uint32{0, protocol.MinFrameSize, 1024, 0, 0} {
		p = binary.LittleEndian.AppendUint32(p, v)
	}
	p = binary.AppendUvarint(p, 0) // codecs
	p = binary.AppendUvarint(p, 1) // services
	p = append(binary.AppendUvarint(p, 3), "svc"...)
	p = binary.AppendUvarint(p, uint64(methods))
	p = append(p, bytes.Repeat(append(binary.AppendUvarint(nil, 1), 'M'), methods)...)
	return append(protocol.AppendHeader(nil, protocol.Header{Type: protocol.FrameHandshakeAck, Length: uint32(len(p))}), p...)
}

// TestTheHandshakeAckIsBounded (issue 36 section 3): a server cannot make
// a client hold a method table of more than protocol.MaxAckEntries
// services and methods (a 4 MiB ack of 15 x 65,535 names cost ~100 MB at
// every dial), nor read an answer larger than
// protocol.MaxHandshakeAckSize: Dial fails at once with a clear error,
// and an ack at the bound is accepted.
func TestTheHandshakeAckIsBounded(t *testing.T) {
	o := client.Options{DialTimeout: 5 * time.Second}

	_, err := client.Dial(ctxTimeout(t, 10*time.Second), []string{answeringServer(t, rawAck(protocol.MaxAckEntries))}, o)
	requireSaidOnce(t, err)
	requireCode(t, err, protocol.CodeUnavailable)
	assert.Contains(t, err.Error(), "the server's handshake answer is malformed: handshake ack: more than 4096 services and methods in the method table")

	// A frame header announcing more than MaxHandshakeAckSize is refused
	// before its payload is read (none follows: the client must not wait
	// for it).
	big := protocol.AppendHeader(nil, protocol.Header{Type: protocol.FrameHandshakeAck, Length: protocol.MaxHandshakeAckSize(protocol.DefaultLimits()) + 1})
	// The error proves it: a client waiting for the payload would fail at
	// the dial timeout with a deadline error instead.
	_, err = client.Dial(ctxTimeout(t, 10*time.Second), []string{answeringServer(t, big)}, o)
	requireSaidOnce(t, err)
	requireCode(t, err, protocol.CodeUnavailable)
	assert.Contains(t, err.Error(), "waiting for the handshake answer: violation: header: payload length 1127627 exceeds max frame size 1127626")

	c, err := client.Dial(ctxTimeout(t, 10*time.Second), []string{answeringServer(t, rawAck(protocol.MaxAckEntries-1))}, o)
	require.NoError(t, err)
	require.NoError(t, c.Close())
}
