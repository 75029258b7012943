package reject

import (
	"context"
	"io"
	"net"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/encoding/gzip"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/tap"

	"github.com/sluicerpc/sluice/bench/internal/rawcodec"
)

// grpcServer is the grpc-go child: the raw codec, gzip registered as
// preName (its Decompress counted), a call capacity of one taken by the unary
// interceptor for the calls it accepts; a call that finds it taken is
// refused ResourceExhausted, by the interceptor or, with tap, by the tap
// handle first.
type grpcServer struct {
	srv     *grpc.Server
	l       net.Listener
	entered chan struct{}
	// active is the calls holding the capacity (0 or 1).
	active         atomic.Int64
	refused        atomic.Uint64
	decompressions atomic.Uint64
}

var errCapacity = status.Error(codes.ResourceExhausted, "call capacity")

func serveGRPC(withTap bool) (floodServer, error) {
	s := &grpcServer{entered: make(chan struct{})}
	// The flood's requests come as preName: gzip, decompressed by
	// grpc-go's own gzip compressor, each call counted.
	encoding.RegisterCompressor(countingCompressor{Compressor: encoding.GetCompressor(gzip.Name), name: preName, n: &s.decompressions})
	opts := []grpc.ServerOption{grpc.ForceServerCodec(rawcodec.Codec{}), grpc.UnaryInterceptor(s.intercept)}
	if withTap {
		opts = append(opts, grpc.InTapHandle(s.tap))
	}
	s.srv = grpc.NewServer(opts...)
	var once sync.Once
	desc := floodDesc(func(ctx context.Context, method string, _ []byte) ([]byte, error) {
		if method == "Hold" {
			once.Do(func() { close(s.entered) })
			<-ctx.Done()
			return nil, ctx.Err()
		}
		return nil, nil
	})
	s.srv.RegisterService(&desc, struct{}{})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s.l = l
	go func() { _ = s.srv.Serve(l) }()
	return s, nil
}

// intercept takes the capacity for the call, or refuses it. grpc-go has
// read and decompressed the request before it runs.
func (s *grpcServer) intercept(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if !s.active.CompareAndSwap(0, 1) {
		s.refused.Add(1)
		return nil, errCapacity
	}
	defer s.active.Store(0)
	return handler(ctx, req)
}

// tap refuses a call while the capacity is taken, from the stream's
// headers, before its message is read.
func (s *grpcServer) tap(ctx context.Context, _ *tap.Info) (context.Context, error) {
	if s.active.Load() != 0 {
		s.refused.Add(1)
		return nil, errCapacity
	}
	return ctx, nil
}

func (s *grpcServer) addr() string { return s.l.Addr().String() }
func (s *grpcServer) held()        { <-s.entered }
func (s *grpcServer) stop()        { s.srv.Stop() }

func (s *grpcServer) counts() (uint64, uint64) { return s.refused.Load(), s.decompressions.Load() }

// countingCompressor is grpc-go's gzip under name, its Decompress calls
// counted.
type countingCompressor struct {
	encoding.Compressor
	name string
	n    *atomic.Uint64
}

func (c countingCompressor) Name() string { return c.name }

func (c countingCompressor) Decompress(r io.Reader) (io.Reader, error) {
	c.n.Add(1)
	return c.Compressor.Decompress(r)
}

type floodService interface{}

// floodDesc is the service flood with methods Hold and Say, each decoding
// its request with the raw codec and then calling the unary interceptor,
// as generated handlers do.
func floodDesc(h func(ctx context.Context, method string, req []byte) ([]byte, error)) grpc.ServiceDesc {
	method := func(name string) grpc.MethodDesc {
		full := "/flood/" + name
		return grpc.MethodDesc{
			MethodName: name,
			Handler: func(_ any, ctx context.Context, dec func(any) error, icpt grpc.UnaryServerInterceptor) (any, error) {
				var in []byte
				if err := dec(&in); err != nil {
					return nil, err
				}
				call := func(ctx context.Context, req any) (any, error) {
					out, err := h(ctx, name, *req.(*[]byte))
					return &out, err
				}
				if icpt == nil {
					return call(ctx, &in)
				}
				return icpt(ctx, &in, &grpc.UnaryServerInfo{FullMethod: full}, call)
			},
		}
	}
	return grpc.ServiceDesc{
		ServiceName: "flood",
		HandlerType: (*floodService)(nil),
		Methods:     []grpc.MethodDesc{method("Hold"), method("Say")},
	}
}
