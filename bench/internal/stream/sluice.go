package stream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/sluicerpc/sluice/client"
	"github.com/sluicerpc/sluice/codecs"
	"github.com/sluicerpc/sluice/server"
)

// never keeps every message uncompressed (the default policy would
// compress the 1 KiB and 64 KiB bodies), so that sluice's system measures
// the same uncompressed path as grpc-go's raw codec.
var never = codecs.Config{Policy: codecs.Policy{MinSize: -1}}

// Sluice is sluice's streaming echo over TCP loopback with its default
// flow-control windows.
func Sluice() System {
	return System{Name: "sluice", Start: startSluice}
}

func sluiceFill(_ context.Context, req []byte, s *server.Stream) error {
	n, size, err := parseFill(req)
	if err != nil {
		return err
	}
	msg := make([]byte, size)
	for range n {
		if err := s.Send(msg); err != nil {
			return err
		}
	}
	return nil
}

// sluiceEcho echoes each message: Send copies msg out before it returns
// and Receive's message is valid until the next Receive, so one loop
// needs no buffer of its own.
func sluiceEcho(_ context.Context, s *server.Stream) error {
	for {
		msg, err := s.Receive()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if err := s.Send(msg); err != nil {
			return err
		}
	}
}

type sluiceStreamer struct{ c *client.Client }

func startSluice() (Streamer, func(), error) {
	mux := server.NewMux()
	mux.HandleServerStream("stream", "Fill", sluiceFill)
	mux.HandleBidiStream("stream", "Echo", sluiceEcho)
	srv, err := server.New(mux, server.Options{Compression: never})
	if err != nil {
		return nil, nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	go func() { _ = srv.Serve(l) }()
	c, err := client.Dial(context.Background(), []string{l.Addr().String()}, client.Options{Compression: never})
	if err != nil {
		_ = srv.Close()
		return nil, nil, err
	}
	return sluiceStreamer{c}, func() { _ = c.Close(); _ = srv.Close() }, nil
}

func (sl sluiceStreamer) Fill(ctx context.Context, n, size int) (int, error) {
	s, err := sl.c.NewStream(ctx, "stream/Fill", client.StreamServer)
	if err != nil {
		return 0, err
	}
	defer s.Close()
	if err := s.Send(fillRequest(n, size)); err != nil {
		return 0, err
	}
	got := 0
	for {
		msg, err := s.Receive()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return got, nil
			}
			return got, err
		}
		if len(msg) != size {
			return got, fmt.Errorf("a message of %d bytes, want %d", len(msg), size)
		}
		got++
	}
}

func (sl sluiceStreamer) Echo(ctx context.Context, n int, body []byte) (int, error) {
	s, err := sl.c.NewStream(ctx, "stream/Echo", client.StreamBidi)
	if err != nil {
		return 0, err
	}
	defer s.Close()
	sent := make(chan error, 1)
	go func() {
		for range n {
			if err := s.Send(body); err != nil {
				sent <- err
				return
			}
		}
		sent <- s.CloseSend()
	}()
	got := 0
	for {
		msg, err := s.Receive()
		if err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			_ = s.Close()
			<-sent
			return got, err
		}
		if len(msg) != len(body) {
			_ = s.Close()
			<-sent
			return got, fmt.Errorf("an echo of %d bytes, want %d", len(msg), len(body))
		}
		got++
	}
	return got, <-sent
}
