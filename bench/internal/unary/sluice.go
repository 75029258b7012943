package unary

import (
	"context"

	"github.com/sluicerpc/sluice/client"
	"github.com/sluicerpc/sluice/codecs"
	"github.com/sluicerpc/sluice/kernel"
	"github.com/sluicerpc/sluice/limiters/concurrency"
	"github.com/sluicerpc/sluice/server"
	"github.com/sluicerpc/sluice/spi"
)

// never is the plain systems' compression: the built-in profiles
// negotiated as by default, but no body compressed either way (the
// default policy would compress the 1 KiB echo), so that these systems
// measure the uncompressed path.
var never = codecs.Config{Policy: codecs.Policy{MinSize: -1}}

// Sluice is sluice's raw echo; with admission, the server's admission is
// enabled with a global concurrency limit no call reaches, so every call
// takes an immediate permit.
func Sluice(admission bool) System {
	name := "sluice"
	if admission {
		name = "sluice-admission"
	}
	return System{Name: name, Start: func() (Caller, func(), error) {
		mux := server.NewMux()
		mux.HandleRaw("echo", "Say", func(_ context.Context, req []byte) ([]byte, error) { return req, nil })
		srv, err := server.New(mux, server.Options{Compression: never})
		if err != nil {
			return nil, nil, err
		}
		if admission {
			if _, err := srv.Admission().Enable(kernel.Options{Global: kernel.Rule{Limits: []spi.Spec{concurrency.Spec(1 << 20)}}}); err != nil {
				return nil, nil, err
			}
		}
		l, err := listen()
		if err != nil {
			return nil, nil, err
		}
		go func() { _ = srv.Serve(l) }()
		c, err := client.Dial(context.Background(), []string{l.Addr().String()}, client.Options{Compression: never})
		if err != nil {
			_ = srv.Close()
			return nil, nil, err
		}
		stop := func() {
			_ = c.Close()
			_ = srv.Close()
		}
		return func(ctx context.Context, body []byte) ([]byte, error) {
			return c.CallRaw(ctx, "echo/Say", body)
		}, stop, nil
	}}
}
