package unary

import (
	"context"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding"
)

// rawCodec passes *[]byte through: grpc-go without protobuf.
type rawCodec struct{}

func (rawCodec) Name() string { return "raw" }

func (rawCodec) Marshal(v any) ([]byte, error) {
	b, ok := v.(*[]byte)
	if !ok {
		return nil, fmt.Errorf("raw codec: marshal of %T", v)
	}
	return *b, nil
}

func (rawCodec) Unmarshal(data []byte, v any) error {
	b, ok := v.(*[]byte)
	if !ok {
		return fmt.Errorf("raw codec: unmarshal into %T", v)
	}
	*b = append((*b)[:0], data...)
	return nil
}

var _ encoding.Codec = rawCodec{}

type echoServer interface{}

var echoDesc = grpc.ServiceDesc{
	ServiceName: "echo",
	HandlerType: (*echoServer)(nil),
	Methods: []grpc.MethodDesc{{
		MethodName: "Say",
		Handler: func(_ any, ctx context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
			var in []byte
			if err := dec(&in); err != nil {
				return nil, err
			}
			return &in, nil
		},
	}},
}

// GRPC is grpc-go's unary echo over TCP loopback with the raw codec.
func GRPC() System {
	return System{Name: "grpc-go", Start: func() (Caller, func(), error) {
		srv := grpc.NewServer(grpc.ForceServerCodec(rawCodec{}))
		srv.RegisterService(&echoDesc, struct{}{})
		l, err := listen()
		if err != nil {
			return nil, nil, err
		}
		go func() { _ = srv.Serve(l) }()
		cc, err := grpc.NewClient(l.Addr().String(),
			grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithDefaultCallOptions(grpc.ForceCodec(rawCodec{})))
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
	}}
}
