package reject

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicerpc/sluice/client"
	"github.com/sluicerpc/sluice/codecs"
	"github.com/sluicerpc/sluice/kernel/governor"
	"github.com/sluicerpc/sluice/protocol"
)

// holdSluice takes the server's one call with a real client: a call to
// flood/Hold that lasts until the returned function ends it.
func holdSluice(addr string) (func(), error) {
	c, err := client.Dial(context.Background(), []string{addr}, client.Options{})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = c.CallRaw(ctx, "flood/Hold", nil)
	}()
	return func() {
		cancel()
		<-done
		_ = c.Close()
	}, nil
}

// floodCodec compresses the sluice flood's bodies: gzip, the codec
// grpc-go's side sends, so that both servers read bodies of about the
// same size (sluice's gzip is klauspost's, grpc-go's the standard
// library's).
var floodCodec = codecs.Gzip()

// rawFlood floods one connection with request frames, written by the
// protocol package directly: every request carries the same body,
// compressed once beforehand, so the client's CPU per call is small and
// the flood fast. conc requests are in flight at a time; a writer sends a
// frame for each refusal the reader receives, several per write when
// several are due (as sluice's client coalesces its writes under load).
type rawFlood struct {
	nc     net.Conn
	tokens chan struct{}
	stop   atomic.Bool
	wg     sync.WaitGroup
	mu     sync.Mutex
	err    error
}

func floodSluice(addr string, body []byte, conc int) (flooder, int, error) {
	z, fits, err := floodCodec.Compress(make([]byte, 0, len(body)+1024), body)
	if err != nil || !fits {
		return nil, 0, fmt.Errorf("compressing the flood body: fits %v, %v", fits, err)
	}
	nc, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return nil, 0, err
	}
	rd := protocol.NewReader(nc, protocol.DefaultLimits())
	hs, err := protocol.AppendHandshake(nil, &protocol.Handshake{
		Version: protocol.Version, Capabilities: protocol.CapCompression, MaxFrameSize: 1 << 20, Codecs: []string{floodCodec.Name()},
	})
	if err == nil {
		_, err = nc.Write(hs)
	}
	var ack protocol.HandshakeAck
	if err == nil {
		h, payload, rerr := rd.ReadFrame()
		switch {
		case rerr != nil:
			err = rerr
		case h.Type != protocol.FrameHandshakeAck:
			err = fmt.Errorf("handshake answered with %v", h.Type)
		default:
			err = protocol.ParseHandshakeAck(h, payload, &ack)
		}
	}
	if err != nil {
		_ = nc.Close()
		return nil, 0, fmt.Errorf("sluice handshake: %w", err)
	}
	req, err := floodRequest(&ack, z, len(body))
	if err != nil {
		_ = nc.Close()
		return nil, 0, err
	}
	f := &rawFlood{nc: nc, tokens: make(chan struct{}, conc)}
	for range conc {
		f.tokens <- struct{}{}
	}
	f.wg.Go(func() { f.write(req) })
	f.wg.Go(func() { f.read(rd) })
	return f, len(z), nil
}

// floodRequest is the request to flood/Say with the compressed body z.
func floodRequest(ack *protocol.HandshakeAck, z []byte, orig int) (protocol.Request, error) {
	r := protocol.Request{Body: z, Compressed: true, OriginalLength: uint32(orig), Cancellable: true}
	for i, n := range ack.Codecs {
		if n == floodCodec.Name() {
			r.CodecID = uint8(i + 1)
		}
	}
	if r.CodecID == 0 {
		return r, fmt.Errorf("the server accepts no %s (ack: %v)", floodCodec.Name(), ack.Codecs)
	}
	for si, s := range ack.Services {
		for mi, m := range s.Methods {
			if s.Name == "flood" && m == "Say" {
				r.Service, r.Method = uint16(si), uint16(mi)
				return r, nil
			}
		}
	}
	return r, errors.New("the server has no flood/Say")
}

// fail records the flood's first error and stops it. Once Stop began,
// errors are its closing of the connection (a write in progress fails
// with "use of closed network connection"): they are not the flood's.
func (f *rawFlood) fail(err error) {
	if f.stop.Load() {
		return
	}
	f.mu.Lock()
	if f.err == nil {
		f.err = err
	}
	f.mu.Unlock()
	f.stop.Store(true)
}

func (f *rawFlood) write(req protocol.Request) {
	w := bufio.NewWriterSize(f.nc, 256<<10)
	var (
		frame []byte
		id    uint64
		err   error
	)
	for range f.tokens {
		for more := true; more; {
			if f.stop.Load() {
				return
			}
			id++
			if frame, err = protocol.AppendRequest(frame[:0], id, &req); err == nil {
				_, err = w.Write(frame)
			}
			if err != nil {
				f.fail(err)
				return
			}
			select {
			case _, ok := <-f.tokens: // another is due: into the same write
				more = ok
			default:
				more = false
			}
		}
		if err := w.Flush(); err != nil {
			f.fail(err)
			return
		}
	}
}

// read takes the answers: each must be the call capacity refusal.
func (f *rawFlood) read(rd *protocol.Reader) {
	defer close(f.tokens) // after Stop closed the connection
	for {
		h, payload, err := rd.ReadFrame()
		if err != nil {
			if !f.stop.Load() {
				f.fail(err)
			}
			return
		}
		switch h.Type {
		case protocol.FrameError:
			var e protocol.ErrorFrame
			if err := protocol.ParseError(h, payload, protocol.DefaultLimits(), &e); err != nil {
				f.fail(err)
				return
			}
			if h.ID == 0 || e.Reason != governor.CallCapacityReason {
				f.fail(fmt.Errorf("call %d: %v %q: %s, not a call capacity refusal", h.ID, e.Code, e.Reason, e.Message))
				return
			}
			f.tokens <- struct{}{} // never blocks: at most conc are out
		case protocol.FramePing:
		default:
			f.fail(fmt.Errorf("call %d answered with %v, not refused", h.ID, h.Type))
			return
		}
	}
}

// Stop ends the flood: no new request is written, the connection is
// closed (the answers to the last requests are not waited for).
func (f *rawFlood) Stop() error {
	f.stop.Store(true)
	_ = f.nc.Close()
	f.wg.Wait()
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}
