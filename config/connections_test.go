package config_test

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/sluicerpc/sluice/config"
	"github.com/sluicerpc/sluice/server"
)

// ServerSettings accepts exactly the connection limits server.New
// accepts, defaults included, over a grid of values around the defaults
// (1024, 64, 8) and the bounds.
func TestConnectionChecksAgreeWithTheServer(t *testing.T) {
	mux := server.NewMux()
	mux.HandleRaw("echo", "Say", func(_ context.Context, req []byte) ([]byte, error) { return req, nil })
	values := []int{0, 1, 4, 8, 9, 64, 65, 1024, 1025, math.MaxInt32, math.MaxInt32 + 1}
	for _, mc := range values {
		for _, hs := range values {
			for _, per := range values {
				src := fmt.Sprintf("version: 1\nserver:\n  connections:\n    max_connections: %d\n    max_handshakes: %d\n    max_handshakes_per_address: %d\n", mc, hs, per)
				doc, err := config.Parse([]byte(src), "")
				if err != nil {
					t.Fatal(err)
				}
				_, cerr := doc.ServerSettings(nil)
				srv, serr := server.New(mux, server.Options{Connections: server.ConnectionLimits{MaxConnections: mc, MaxHandshakes: hs, MaxHandshakesPerAddress: per}})
				if serr == nil {
					srv.Close()
				}
				if (cerr == nil) != (serr == nil) {
					t.Errorf("connections %d/%d/%d: config says %v, server.New says %v", mc, hs, per, cerr, serr)
				}
			}
		}
	}
}
