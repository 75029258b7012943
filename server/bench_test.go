package server_test

import (
	"testing"

	"github.com/sluicerpc/sluice/kernel"
	"github.com/sluicerpc/sluice/limiters/concurrency"
	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/server"
	"github.com/sluicerpc/sluice/spi"
)

// BenchmarkServerUnary is one echo call of 1 byte, serial, over TCP
// loopback, from a client that only encodes and parses frames: allocs/op
// are the server's (plus the raw client's, which allocates nothing per
// call), both sides in this process.
func BenchmarkServerUnary(b *testing.B) {
	for _, admission := range []bool{false, true} {
		name := "disabled"
		if admission {
			name = "immediate-permit"
		}
		b.Run(name, func(b *testing.B) {
			s := startServer(b, server.Options{})
			if admission {
				if _, err := s.Admission().Enable(kernel.Options{Global: kernel.Rule{Limits: []spi.Spec{concurrency.Spec(1 << 20)}}}); err != nil {
					b.Fatal(err)
				}
			}
			benchUnaryCalls(b, s)
		})
	}
}

// benchUnaryCalls runs b.N serial echo calls of 1 byte on s, over TCP
// loopback from the raw client.
func benchUnaryCalls(b *testing.B, s *testServer) {
	c := dialRaw(b, s.addr)
	si, mi := c.method("echo", "Say")
	body := []byte{'x'}
	frame := make([]byte, 0, 64)
	var resp protocol.Response
	lim := protocol.DefaultLimits()
	b.ReportAllocs()
	for b.Loop() {
		c.nextID++
		frame, _ = protocol.AppendRequest(frame[:0], c.nextID, &protocol.Request{Service: si, Method: mi, Body: body})
		if _, err := c.nc.Write(frame); err != nil {
			b.Fatal(err)
		}
		h, payload, err := c.rd.ReadFrame()
		if err != nil || h.Type != protocol.FrameResponse {
			b.Fatal(h.Type, err)
		}
		if err := protocol.ParseResponse(h, payload, lim, &resp); err != nil {
			b.Fatal(err)
		}
	}
}
