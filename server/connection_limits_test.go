package server_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/server"
)

// TestConnectionLimitsDefaultsAndErrors: zero fields take their defaults,
// a smaller bound defaults to at most the larger one set, and an explicit
// value above its containing bound is an error naming the field, from New
// and from SetConnectionLimits (which then changes nothing).
func TestConnectionLimitsDefaultsAndErrors(t *testing.T) {
	type cl = server.ConnectionLimits
	tests := []struct {
		name    string
		in      cl
		want    cl
		wantErr string
	}{
		{"defaults", cl{}, cl{1024, 64, 8}, ""},
		{"connections alone clamp handshakes", cl{MaxConnections: 10}, cl{10, 10, 8}, ""},
		{"connections alone clamp both", cl{MaxConnections: 5}, cl{5, 5, 5}, ""},
		{"handshakes alone clamp per address", cl{MaxHandshakes: 4}, cl{1024, 4, 4}, ""},
		{"per address up to handshakes", cl{MaxHandshakesPerAddress: 64}, cl{1024, 64, 64}, ""},
		{"all set", cl{10, 6, 2}, cl{10, 6, 2}, ""},
		{"per address above handshakes", cl{MaxHandshakes: 4, MaxHandshakesPerAddress: 5}, cl{},
			"server: connection limits: conngate: MaxHandshakesPerAddress (5) must not exceed MaxHandshakes (4)"},
		{"per address above the default handshakes", cl{MaxHandshakesPerAddress: 65}, cl{},
			"server: connection limits: conngate: MaxHandshakesPerAddress (65) must not exceed MaxHandshakes (64)"},
		{"negative per address", cl{MaxHandshakesPerAddress: -1}, cl{},
			"server: connection limits: conngate: MaxHandshakesPerAddress must be at least 0 (0 = bounded by MaxHandshakes), got -1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, err := server.New(newTestMux(newHandlers()), server.Options{Connections: tt.in})
			if tt.wantErr != "" {
				assert.EqualError(t, err, tt.wantErr)
				s := startServer(t, server.Options{Connections: cl{10, 6, 2}})
				assert.EqualError(t, s.SetConnectionLimits(tt.in), tt.wantErr)
				assert.Equal(t, cl{10, 6, 2}, s.ConnectionLimits(), "a rejected change changes nothing")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, srv.ConnectionLimits())
			s := startServer(t, server.Options{Connections: cl{10, 6, 2}})
			require.NoError(t, s.SetConnectionLimits(tt.in))
			assert.Equal(t, tt.want, s.ConnectionLimits())
		})
	}
}

func TestHandshakeTimeoutValidated(t *testing.T) {
	_, err := server.New(newTestMux(newHandlers()), server.Options{HandshakeTimeout: -time.Second})
	assert.EqualError(t, err, "server: Options.HandshakeTimeout must not be negative (0 = 10s), got -1s")
	_, err = server.New(newTestMux(newHandlers()), server.Options{HandshakeTimeout: time.Millisecond})
	assert.NoError(t, err)
}
