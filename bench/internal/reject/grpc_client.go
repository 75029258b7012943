package reject

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/status"

	"github.com/sluicerpc/sluice/bench/internal/rawcodec"
)

// dialGRPC connects with the raw codec, each request compressed as
// preName (gzip bytes, each body compressed once).
func dialGRPC(addr string) (*grpc.ClientConn, error) {
	registerPre()
	return grpc.NewClient(addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodec(rawcodec.Codec{}), grpc.UseCompressor(preName)))
}

// holdGRPC takes the server's one call: a call to /flood/Hold on a
// connection of its own that lasts until the returned function ends it.
func holdGRPC(addr string) (func(), error) {
	cc, err := dialGRPC(addr)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		var in, out []byte
		_ = cc.Invoke(ctx, "/flood/Hold", &in, &out)
	}()
	return func() {
		cancel()
		<-done
		_ = cc.Close()
	}, nil
}

// grpcFlood is conc goroutines calling /flood/Say in a loop on one
// connection, each request the body in grpc-go's gzip (compressed once:
// preName); every call must fail ResourceExhausted.
type grpcFlood struct {
	cc   *grpc.ClientConn
	stop atomic.Bool
	wg   sync.WaitGroup
	err  atomic.Value
}

func floodGRPC(addr string, body []byte, conc int) (flooder, int, error) {
	cc, err := dialGRPC(addr)
	if err != nil {
		return nil, 0, err
	}
	f := &grpcFlood{cc: cc}
	for range conc {
		f.wg.Go(func() {
			var out []byte
			for !f.stop.Load() {
				err := cc.Invoke(context.Background(), "/flood/Say", &body, &out)
				if status.Code(err) != codes.ResourceExhausted {
					if err == nil {
						err = errors.New("a call was accepted")
					}
					f.err.CompareAndSwap(nil, fmt.Errorf("flood/Say: %w", err))
					f.stop.Store(true)
				}
			}
		})
	}
	z, err := encoding.GetCompressor(preName).(*preCompressor).compressed(body)
	if err != nil {
		_ = f.Stop()
		return nil, 0, err
	}
	return f, len(z), nil
}

// Stop ends the flood after the calls in flight.
func (f *grpcFlood) Stop() error {
	f.stop.Store(true)
	f.wg.Wait()
	_ = f.cc.Close()
	if e, ok := f.err.Load().(error); ok {
		return e
	}
	return nil
}
