package stream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/sluicerpc/sluice/bench/internal/rawcodec"
)

// GRPC is grpc-go's streaming echo over TCP loopback with the raw codec
// and its default flow-control windows.
func GRPC() System {
	return System{Name: "grpc-go", Start: startGRPC}
}

var streamDesc = grpc.ServiceDesc{
	ServiceName: "stream",
	HandlerType: (*any)(nil),
	Streams: []grpc.StreamDesc{
		{StreamName: "Fill", ServerStreams: true, Handler: grpcFill},
		{StreamName: "Echo", ServerStreams: true, ClientStreams: true, Handler: grpcEcho},
	},
}

func grpcFill(_ any, s grpc.ServerStream) error {
	var req []byte
	if err := s.RecvMsg(&req); err != nil {
		return err
	}
	n, size, err := parseFill(req)
	if err != nil {
		return err
	}
	msg := make([]byte, size)
	for range n {
		if err := s.SendMsg(&msg); err != nil {
			return err
		}
	}
	return nil
}

func grpcEcho(_ any, s grpc.ServerStream) error {
	for {
		// A message handed to SendMsg may still be being written when it
		// returns (grpc-go's contract: do not modify it), so each echo
		// gets its own buffer.
		var msg []byte
		if err := s.RecvMsg(&msg); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if err := s.SendMsg(&msg); err != nil {
			return err
		}
	}
}

type grpcStreamer struct{ cc *grpc.ClientConn }

func startGRPC() (Streamer, func(), error) {
	srv := grpc.NewServer(grpc.ForceServerCodec(rawcodec.Codec{}))
	srv.RegisterService(&streamDesc, struct{}{})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	go func() { _ = srv.Serve(l) }()
	cc, err := grpc.NewClient(l.Addr().String(),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodec(rawcodec.Codec{})))
	if err != nil {
		srv.Stop()
		return nil, nil, err
	}
	return grpcStreamer{cc}, func() { _ = cc.Close(); srv.Stop() }, nil
}

func (g grpcStreamer) Fill(ctx context.Context, n, size int) (int, error) {
	s, err := g.cc.NewStream(ctx, &streamDesc.Streams[0], "/stream/Fill")
	if err != nil {
		return 0, err
	}
	req := fillRequest(n, size)
	if err := s.SendMsg(&req); err != nil {
		return 0, err
	}
	if err := s.CloseSend(); err != nil {
		return 0, err
	}
	got := 0
	var msg []byte
	for {
		if err := s.RecvMsg(&msg); err != nil {
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

func (g grpcStreamer) Echo(ctx context.Context, n int, body []byte) (int, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	s, err := g.cc.NewStream(ctx, &streamDesc.Streams[1], "/stream/Echo")
	if err != nil {
		return 0, err
	}
	sent := make(chan error, 1)
	go func() {
		for range n {
			if err := s.SendMsg(&body); err != nil {
				sent <- err
				return
			}
		}
		sent <- s.CloseSend()
	}()
	got := 0
	var msg []byte
	for {
		if err := s.RecvMsg(&msg); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			cancel()
			<-sent
			return got, err
		}
		if len(msg) != len(body) {
			cancel()
			<-sent
			return got, fmt.Errorf("an echo of %d bytes, want %d", len(msg), len(body))
		}
		got++
	}
	return got, <-sent
}
