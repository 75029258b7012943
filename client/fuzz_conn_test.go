package client_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluicerpc/sluice/client"
	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/server/servertest"
)

// FuzzClientConnection answers a client's handshake with a valid
// HandshakeAck (its capabilities chosen by the input's first byte:
// streaming, cancel, compression with every codec), waits for the client's
// unary call and stream, then sends the rest of the input and closes.
// The client must never panic (a recovered panic on its reader counts too:
// it is logged), its call and stream must end (no deadline is needed to
// end them once the connection is gone), and once closed it holds nothing
// for streams. The seeds include Messages declaring lengths at and beyond
// MaxWindow, which once left the client's windows unreturnable (issue 25).
func FuzzClientConnection(f *testing.F) {
	resp, _ := protocol.AppendResponse(nil, 1, &protocol.Response{Body: []byte("ok")})
	f.Add(append([]byte{0x03}, resp...))
	for _, n := range []uint32{protocol.MaxWindow, protocol.MaxWindow + 1, 1<<32 - 1} {
		m, _ := protocol.AppendMessage(nil, 3, &protocol.Message{Body: []byte{0}, Compressed: true, CodecID: 1, OriginalLength: n})
		f.Add(append([]byte{0x07}, m...))
		m, _ = protocol.AppendMessage(nil, 1, &protocol.Message{Body: []byte{0}, Compressed: true, CodecID: 1, OriginalLength: n})
		f.Add(append([]byte{0x03}, m...))
	}
	msg, _ := protocol.AppendMessage(nil, 3, &protocol.Message{Body: []byte("hello")})
	end, _ := protocol.AppendEnd(nil, 3, &protocol.End{})
	wu, _ := protocol.AppendWindowUpdate(nil, 3, &protocol.WindowUpdate{Returned: 5, Growth: 1 << 16})
	ga, _ := protocol.AppendGoAway(nil, &protocol.GoAway{LastID: 3})
	f.Add(append(append(append(append([]byte{0x03}, msg...), wu...), end...), ga...))
	f.Add(append([]byte{0x03}, protocol.AppendPing(nil, [8]byte{7})...))
	f.Add([]byte{0x00, protocol.Magic, 9, 0, 0, 0xff, 0xff, 0xff, 0x7f})

	f.Fuzz(func(t *testing.T, input []byte) {
		var choice byte
		if len(input) > 0 {
			choice, input = input[0], input[1:]
		}
		var caps protocol.Capabilities
		var codecs []string
		if choice&1 != 0 {
			caps |= protocol.CapStreaming
		}
		if choice&2 != 0 {
			caps |= protocol.CapCancel
		}
		if choice&4 != 0 {
			caps |= protocol.CapCompression
			codecs = []string{"zstd", "s2", "gzip", "br"}
		}
		n := servertest.NewNetwork()
		l, err := n.Listen("")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		var peer sync.WaitGroup
		peer.Go(func() {
			nc, err := l.Accept()
			if err != nil {
				return
			}
			defer nc.Close()
			_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
			rd := protocol.NewReader(nc, protocol.DefaultLimits())
			if h, _, err := rd.ReadFrame(); err != nil || h.Type != protocol.FrameHandshake {
				return
			}
			ack, _ := protocol.AppendHandshakeAck(nil, &protocol.HandshakeAck{
				Version: protocol.Version, Capabilities: caps,
				MaxFrameSize: 1 << 20, MaxMetadataBytes: 1024, Codecs: codecs,
				Services: []protocol.ServiceInfo{{Name: "svc", Methods: []string{"M", "S"}}},
			})
			if _, err := nc.Write(ack); err != nil {
				return
			}
			// The call's Request, and the stream's when streams were
			// negotiated: then the input meets both in flight.
			want := 1
			if caps.Has(protocol.CapStreaming) {
				want = 2
			}
			for seen := 0; seen < want; {
				h, _, err := rd.ReadFrame()
				if err != nil {
					return
				}
				if h.Type == protocol.FrameRequest {
					seen++
				}
			}
			_, _ = nc.Write(input)
			_ = nc.Close()
		})

		logs := &logRecorder{}
		c, err := client.Dial(context.Background(), []string{l.Addr().String()}, client.Options{
			Dialer: n.Dial, Logger: slog.New(logs), MaxAttempts: 1, // one connection: no retry
		})
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		var calls sync.WaitGroup
		calls.Go(func() { _, _ = c.CallRaw(ctx, "svc/M", []byte("x")) })
		if caps.Has(protocol.CapStreaming) {
			calls.Go(func() {
				s, err := c.NewStream(ctx, "svc/S", client.StreamBidi)
				if err != nil {
					return
				}
				defer s.Close()
				for {
					if _, err := s.Receive(); err != nil {
						return
					}
				}
			})
		}
		calls.Wait()
		if ctx.Err() != nil {
			t.Fatalf("the call or the stream outlived the connection: %v", ctx.Err())
		}
		_ = c.Close()
		peer.Wait()
		if strings.Contains(logs.text(), "panic while handling a frame") {
			t.Fatalf("the client's reader panicked:\n%s", logs.text())
		}
		if led := client.StreamLedgerOf(c); led != (client.StreamLedger{}) {
			t.Fatalf("the closed client still holds %+v for streams", led)
		}
	})
}
