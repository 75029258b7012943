package unary

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding/gzip"

	"github.com/sluicerpc/sluice/bench/internal/rawcodec"
	"github.com/sluicerpc/sluice/client"
	"github.com/sluicerpc/sluice/codecs"
	"github.com/sluicerpc/sluice/server"
	"github.com/sluicerpc/sluice/spi"
)

// SluiceCompressed is sluice's raw echo with one codec on both sides:
// the client offers only c and the server accepts only c, each with the
// default policy (bodies of at least 1 KiB that compression shrinks by at
// least 64 bytes and 5%), so requests and responses travel compressed
// with c. Named "sluice-<profile>".
func SluiceCompressed(c spi.Codec) System {
	cfg := codecs.Config{Codecs: []spi.Codec{c}}
	return System{Name: "sluice-" + c.Name(), Start: func() (Caller, func(), error) {
		mux := server.NewMux()
		mux.HandleRaw("echo", "Say", func(_ context.Context, req []byte) ([]byte, error) { return req, nil })
		srv, err := server.New(mux, server.Options{Compression: cfg})
		if err != nil {
			return nil, nil, err
		}
		l, err := listen()
		if err != nil {
			return nil, nil, err
		}
		go func() { _ = srv.Serve(l) }()
		cl, err := client.Dial(context.Background(), []string{l.Addr().String()}, client.Options{Compression: cfg})
		if err != nil {
			_ = srv.Close()
			return nil, nil, err
		}
		stop := func() {
			_ = cl.Close()
			_ = srv.Close()
		}
		return func(ctx context.Context, body []byte) ([]byte, error) {
			return cl.CallRaw(ctx, "echo/Say", body)
		}, stop, nil
	}}
}

// GRPCGzip is grpc-go's unary echo with its gzip compressor
// (google.golang.org/grpc/encoding/gzip): the client compresses every
// request, and the server answers with the request's compressor.
func GRPCGzip() System {
	return System{Name: "grpc-go-gzip", Start: func() (Caller, func(), error) {
		return startGRPC(grpc.UseCompressor(gzip.Name))
	}}
}

// startGRPC serves the echo with the raw codec and dials it with the
// call options given.
func startGRPC(callOpts ...grpc.CallOption) (Caller, func(), error) {
	srv := grpc.NewServer(grpc.ForceServerCodec(rawcodec.Codec{}))
	srv.RegisterService(&echoDesc, struct{}{})
	l, err := listen()
	if err != nil {
		return nil, nil, err
	}
	go func() { _ = srv.Serve(l) }()
	cc, err := grpc.NewClient(l.Addr().String(),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(append([]grpc.CallOption{grpc.ForceCodec(rawcodec.Codec{})}, callOpts...)...))
	if err != nil {
		srv.Stop()
		return nil, nil, err
	}
	stop := func() {
		_ = cc.Close()
		srv.Stop()
	}
	return func(ctx context.Context, body []byte) ([]byte, error) {
		var out []byte
		if err := cc.Invoke(ctx, "/echo/Say", &body, &out); err != nil {
			return nil, err
		}
		return out, nil
	}, stop, nil
}
