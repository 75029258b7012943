package client_test

import (
	"context"
	"testing"

	"github.com/sluicerpc/sluice/client"
	"github.com/sluicerpc/sluice/message"
	"github.com/sluicerpc/sluice/server"
)

// BenchmarkCallRaw measures a unary call end to end against a real server
// over TCP loopback with a 1-byte payload.
func BenchmarkCallRaw(b *testing.B) {
	ts := startServer(b, echoMux(nil), server.Options{})
	c := dial(b, client.Options{}, ts.addr)
	req := []byte{1}
	ctx := context.Background()

	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.CallRaw(ctx, "echo/Echo", req); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if _, err := c.CallRaw(ctx, "echo/Echo", req); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
	b.Run("serial-deadline", func(b *testing.B) {
		dctx, cancel := context.WithTimeout(ctx, 1<<40)
		defer cancel()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.CallRaw(dctx, "echo/Echo", req); err != nil {
				b.Fatal(err)
			}
		}
	})
}

type benchMsg struct {
	N int `json:"n"`
}

// BenchmarkCallTyped measures the typed helper with the JSON codec.
func BenchmarkCallTyped(b *testing.B) {
	mux := server.NewMux()
	server.Handle(mux, "bench", "Echo", message.JSON[benchMsg](), message.JSON[benchMsg](),
		func(_ context.Context, r *benchMsg) (*benchMsg, error) { return r, nil })
	ts := startServer(b, mux, server.Options{})
	c := dial(b, client.Options{}, ts.addr)
	ctx := context.Background()
	req := &benchMsg{N: 1}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := client.Call(ctx, c, "bench/Echo", req, message.JSON[benchMsg](), message.JSON[benchMsg]()); err != nil {
			b.Fatal(err)
		}
	}
}
