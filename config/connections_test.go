package config_test

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"testing"

	"github.com/sluicerpc/sluice/codecs"
	"github.com/sluicerpc/sluice/config"
	"github.com/sluicerpc/sluice/kernel/governor"
	"github.com/sluicerpc/sluice/server"
	"github.com/sluicerpc/sluice/spi"
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

// ServerSettings accepts exactly the call capacities, stream windows and
// compression sections server.New accepts given the same values, and
// converts them to those values.
func TestServerChecksAgreeWithTheServer(t *testing.T) {
	mux := server.NewMux()
	mux.HandleRaw("echo", "Say", func(_ context.Context, req []byte) ([]byte, error) { return req, nil })
	type tc struct {
		doc  string
		opts server.Options
	}
	var cases []tc
	for _, v := range []int{0, 1, 2097151, 2097152} {
		cases = append(cases,
			tc{fmt.Sprintf("calls: {per_connection: %d}", v), server.Options{Calls: server.CallCapacity{PerConnection: v}}},
			tc{fmt.Sprintf("calls: {per_server: %d}", v), server.Options{Calls: server.CallCapacity{PerServer: v}}})
	}
	for _, v := range []int{0, 1, 65535, 65536, 1 << 20, math.MaxInt32, math.MaxInt32 + 1} {
		cases = append(cases, tc{fmt.Sprintf("streams: {window: %d}", v), server.Options{StreamWindow: v}})
	}
	cases = append(cases,
		tc{"compression: {}", server.Options{}},
		tc{"compression: {disabled: true}", server.Options{Compression: codecs.Config{Off: true}}},
		tc{"compression: {disabled: true, codecs: []}", server.Options{Compression: codecs.Config{Off: true, Codecs: []spi.Codec{}}}},
		tc{"compression: {codecs: [br, s2]}", server.Options{Compression: codecs.Config{Codecs: []spi.Codec{codecs.Brotli(), codecs.S2()}}}},
		tc{"compression: {codecs: [gzip, gzip]}", server.Options{Compression: codecs.Config{Codecs: []spi.Codec{codecs.Gzip(), codecs.Gzip()}}}},
		tc{"compression: {max_decoded_size: 4294967295}", server.Options{Compression: codecs.Config{MaxDecodedSize: 1<<32 - 1}}},
		tc{"compression: {max_decoded_size: 4294967296}", server.Options{Compression: codecs.Config{MaxDecodedSize: 1 << 32}}},
		tc{"compression: {decode_ratio: -1}", server.Options{Compression: codecs.Config{DecodeRatio: -1}}},
		tc{"compression: {policy: {min_size: -5, min_saving_percent: 99}}", server.Options{Compression: codecs.Config{Policy: codecs.Policy{MinSize: -5, MinSavingPercent: 99}}}},
		tc{"compression: {policy: {min_saving_percent: 100}}", server.Options{Compression: codecs.Config{Policy: codecs.Policy{MinSavingPercent: 100}}}},
		tc{"compression: {methods: {\"echo/Say\": {min_saving_percent: 100}}}", server.Options{Compression: codecs.Config{Methods: map[string]codecs.Policy{"echo/Say": {MinSavingPercent: 100}}}}},
		tc{"governor: {decodes: 1, retained_bytes: 1, decoded_bytes: 1, stream_bytes: 1}", server.Options{Governor: governor.Limits{Decodes: 1, RetainedBytes: 1, DecodedBytes: 1, StreamBytes: 1}}},
	)
	for _, c := range cases {
		doc, err := config.Parse([]byte("version: 1\nserver:\n  "+c.doc+"\n"), "")
		if err != nil {
			t.Fatalf("%s: %v", c.doc, err)
		}
		s, cerr := doc.ServerSettings(nil)
		srv, serr := server.New(mux, c.opts)
		if serr == nil {
			srv.Close()
		}
		if (cerr == nil) != (serr == nil) {
			t.Errorf("%s: config says %v, server.New says %v", c.doc, cerr, serr)
			continue
		}
		if cerr == nil {
			got := server.Options{Calls: s.Calls, Compression: s.Compression, StreamWindow: s.StreamWindow, Governor: s.Governor}
			if !reflect.DeepEqual(got, c.opts) {
				t.Errorf("%s: converts to %+v, want %+v", c.doc, got, c.opts)
			}
		}
	}
}
