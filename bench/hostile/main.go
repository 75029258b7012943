// Command hostile measures what eight connections sending decompression
// bombs cost the honest clients of a sluice server with default options
// (issue 25 section 2): honest compressed calls per second alone, then
// while eight raw connections keep sending gzip bodies that declare the
// largest original length the server accepts (64 MiB) and decode to more,
// and the ratio of the two. Before the governor's fair shares the bombs
// kept the decoded-bytes budget full and honest traffic fell to well under
// 1% of its rate; the target is a ratio of at least 0.8. Each bomb passes
// every check before decoding (its declared length is exactly the
// expansion bound of its compressed size), so the server pays its decode
// in full.
//
//	go run ./hostile [-d 5s] [-honest 8] [-bombers 8] [-inflight 4]
//
// It prints one line per phase and a RATIO line; it exits 1 when the
// ratio is below -min.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicerpc/sluice/client"
	"github.com/sluicerpc/sluice/codecs"
	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/server"
)

func main() {
	d := flag.Duration("d", 5*time.Second, "length of each phase")
	honest := flag.Int("honest", 8, "concurrent honest calls")
	bombers := flag.Int("bombers", 8, "bomb-sending connections")
	inflight := flag.Int("inflight", 4, "bombs in flight per connection")
	minRatio := flag.Float64("min", 0.8, "the least ratio that passes")
	flag.Parse()
	if err := run(*d, *honest, *bombers, *inflight, *minRatio); err != nil {
		fmt.Fprintln(os.Stderr, "hostile:", err)
		os.Exit(1)
	}
}

func run(d time.Duration, honest, bombers, inflight int, minRatio float64) error {
	mux := server.NewMux()
	mux.HandleRaw("bench", "Echo", func(_ context.Context, req []byte) ([]byte, error) { return req, nil })
	srv, err := server.New(mux, server.Options{})
	if err != nil {
		return err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	go func() { _ = srv.Serve(l) }()
	defer func() { _ = srv.Close() }()
	addr := l.Addr().String()

	c, err := client.Dial(context.Background(), []string{addr}, client.Options{MaxAttempts: 1})
	if err != nil {
		return err
	}
	defer func() { _ = c.Close() }()
	body := bytes.Repeat([]byte("an honest request, compressible enough to go gzip-compressed; "), 256) // 16 KiB

	alone, failedAlone := measure(c, body, honest, d)
	fmt.Printf("honest alone:        %8.0f calls/s (%d failed)\n", alone, failedAlone)

	bomb, err := gzipBomb(codecs.DefaultMaxDecodedSize)
	if err != nil {
		return err
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var sent atomic.Uint64
	for range bombers {
		b, err := dialBomber(addr)
		if err != nil {
			close(stop)
			wg.Wait()
			return err
		}
		wg.Go(func() { b.flood(bomb, inflight, stop, &sent) })
	}
	time.Sleep(d / 5) // the bombs take the budgets first
	under, failedUnder := measure(c, body, honest, d)
	close(stop)
	wg.Wait()
	st := srv.Stats()
	fmt.Printf("honest with %d bombers: %8.0f calls/s (%d failed; %d bombs sent, %d decode failures, %d refused decoded_bytes)\n",
		bombers, under, failedUnder, sent.Load(), st.DecodeFailures, st.Refusals[server.ReasonDecodedBytes])
	ratio := under / alone
	fmt.Printf("RATIO honest calls/s with bombers / alone: %.3f (target >= %.2f)\n", ratio, minRatio)
	if ratio < minRatio {
		return fmt.Errorf("ratio %.3f below %.2f", ratio, minRatio)
	}
	return nil
}

// measure runs conc callers for d and returns the successful calls per
// second and the number of failures.
func measure(c *client.Client, body []byte, conc int, d time.Duration) (float64, uint64) {
	var ok, failed atomic.Uint64
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	begin := time.Now()
	var wg sync.WaitGroup
	for range conc {
		wg.Go(func() {
			for ctx.Err() == nil {
				cctx, ccancel := context.WithTimeout(ctx, 2*time.Second)
				out, err := c.CallRaw(cctx, "bench/Echo", body)
				ccancel()
				switch {
				case err == nil && bytes.Equal(out, body):
					ok.Add(1)
				case ctx.Err() == nil:
					if failed.Add(1) <= 3 {
						fmt.Fprintln(os.Stderr, "  a failed honest call:", err)
					}
				}
			}
		})
	}
	wg.Wait()
	return float64(ok.Load()) / time.Since(begin).Seconds(), failed.Load()
}

// gzipBomb is a gzip body that the server's checks accept and whose
// decode it pays in full: it declares declared bytes, exactly the
// expansion bound of its compressed size (128 x, DecodeRatio's default),
// and decodes to declared+1 zeros (which it produces first, then fails:
// more than declared) followed by incompressible bytes that make up the
// compressed size.
func gzipBomb(declared int) ([]byte, error) {
	codec := codecs.Gzip()
	const ratio = 128
	want := declared / ratio // the compressed size the bound needs
	src := make([]byte, declared+1, declared+1+want)
	state := uint64(0x9e3779b97f4a7c15)
	for range want {
		state ^= state << 13
		state ^= state >> 7
		state ^= state << 17
		src = append(src, byte(state))
	}
	z, fits, err := codec.Compress(make([]byte, 0, 2*want), src)
	if err != nil || !fits {
		return nil, fmt.Errorf("compressing the bomb: fits %v, %v", fits, err)
	}
	if len(z)*ratio < declared {
		return nil, fmt.Errorf("the bomb compressed to %d bytes: %d x %d is under the %d it declares", len(z), len(z), ratio, declared)
	}
	return z, nil
}

// bomber is one raw connection sending bombs.
type bomber struct {
	nc  net.Conn
	rd  *protocol.Reader
	req protocol.Request
}

func dialBomber(addr string) (*bomber, error) {
	nc, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return nil, err
	}
	hs, err := protocol.AppendHandshake(nil, &protocol.Handshake{
		Version: protocol.Version, Capabilities: protocol.CapCompression, MaxFrameSize: 1 << 20, Codecs: []string{"gzip"},
	})
	if err == nil {
		_, err = nc.Write(hs)
	}
	rd := protocol.NewReader(nc, protocol.DefaultLimits())
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
		return nil, fmt.Errorf("bomber handshake: %w", err)
	}
	b := &bomber{nc: nc, rd: rd, req: protocol.Request{Compressed: true, CodecID: 1, OriginalLength: uint32(codecs.DefaultMaxDecodedSize)}}
	if len(ack.Codecs) == 0 || ack.Codecs[0] != "gzip" {
		_ = nc.Close()
		return nil, fmt.Errorf("the server accepts no gzip (ack: %v)", ack.Codecs)
	}
	for si, s := range ack.Services {
		for mi, m := range s.Methods {
			if s.Name == "bench" && m == "Echo" {
				b.req.Service, b.req.Method = uint16(si), uint16(mi)
				return b, nil
			}
		}
	}
	_ = nc.Close()
	return nil, errors.New("the server has no bench/Echo")
}

// flood keeps inflight bombs outstanding until stop is closed: a reader
// takes each answer (an Error: the bomb is refused or fails to decode)
// and the writer sends the next.
func (b *bomber) flood(bomb []byte, inflight int, stop <-chan struct{}, sent *atomic.Uint64) {
	tokens := make(chan struct{}, inflight)
	for range inflight {
		tokens <- struct{}{}
	}
	go func() {
		defer close(tokens)
		for {
			h, _, err := b.rd.ReadFrame()
			if err != nil {
				return
			}
			if h.Type == protocol.FrameError || h.Type == protocol.FrameResponse {
				tokens <- struct{}{}
			}
		}
	}()
	b.req.Body = bomb
	var frame []byte
	var id uint64
	for {
		select {
		case <-stop:
			_ = b.nc.Close()
			return
		case _, ok := <-tokens:
			if !ok {
				return
			}
		}
		id++
		frame, _ = protocol.AppendRequest(frame[:0], id, &b.req)
		if _, err := b.nc.Write(frame); err != nil {
			if !strings.Contains(err.Error(), "closed") {
				fmt.Fprintln(os.Stderr, "bomber:", err)
			}
			return
		}
		sent.Add(1)
	}
}
