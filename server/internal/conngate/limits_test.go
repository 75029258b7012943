package conngate_test

import (
	"testing"

	"github.com/sluicerpc/sluice/server/internal/conngate"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDefaultLimits(t *testing.T) {
	l := conngate.DefaultLimits()
	assert.Equal(t, conngate.Limits{MaxConnections: 1024, MaxHandshakes: 64, MaxHandshakesPerAddress: 8}, l)
	assert.NoError(t, l.Validate())
}

func TestLimitsValidate(t *testing.T) {
	tests := []struct {
		name    string
		l       conngate.Limits
		wantErr string
	}{
		{"defaults", conngate.DefaultLimits(), ""},
		{"minimal", conngate.Limits{MaxConnections: 1}, ""},
		{"handshakes follow connections", conngate.Limits{MaxConnections: 10, MaxHandshakes: 0}, ""},
		{"handshakes equal connections", conngate.Limits{MaxConnections: 10, MaxHandshakes: 10}, ""},
		{"max", conngate.Limits{MaxConnections: conngate.MaxLimit, MaxHandshakes: conngate.MaxLimit}, ""},
		{"zero connections", conngate.Limits{}, "conngate: MaxConnections must be at least 1, got 0"},
		{"negative connections", conngate.Limits{MaxConnections: -5}, "conngate: MaxConnections must be at least 1, got -5"},
		{"too many connections", conngate.Limits{MaxConnections: conngate.MaxLimit + 1}, "conngate: MaxConnections must be at most 2147483647, got 2147483648"},
		{"negative handshakes", conngate.Limits{MaxConnections: 4, MaxHandshakes: -1}, "conngate: MaxHandshakes must be at least 0 (0 = bounded by MaxConnections), got -1"},
		{"handshakes above connections", conngate.Limits{MaxConnections: 4, MaxHandshakes: 5}, "conngate: MaxHandshakes (5) must not exceed MaxConnections (4)"},
		{"per address follows handshakes", conngate.Limits{MaxConnections: 10, MaxHandshakes: 4, MaxHandshakesPerAddress: 0}, ""},
		{"per address equal to handshakes", conngate.Limits{MaxConnections: 10, MaxHandshakes: 4, MaxHandshakesPerAddress: 4}, ""},
		{"per address equal to connections when handshakes follow them", conngate.Limits{MaxConnections: 10, MaxHandshakesPerAddress: 10}, ""},
		{"per address max", conngate.Limits{MaxConnections: conngate.MaxLimit, MaxHandshakes: conngate.MaxLimit, MaxHandshakesPerAddress: conngate.MaxLimit}, ""},
		{"negative per address", conngate.Limits{MaxConnections: 4, MaxHandshakes: 2, MaxHandshakesPerAddress: -1}, "conngate: MaxHandshakesPerAddress must be at least 0 (0 = bounded by MaxHandshakes), got -1"},
		{"per address above handshakes", conngate.Limits{MaxConnections: 10, MaxHandshakes: 4, MaxHandshakesPerAddress: 5}, "conngate: MaxHandshakesPerAddress (5) must not exceed MaxHandshakes (4)"},
		{"per address above connections", conngate.Limits{MaxConnections: 10, MaxHandshakesPerAddress: 11}, "conngate: MaxHandshakesPerAddress (11) must not exceed MaxConnections (10), the handshake bound when MaxHandshakes is 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.l.Validate()
			if tt.wantErr == "" {
				assert.NoError(t, err)
				g, err := conngate.New(tt.l)
				require.NoError(t, err)
				assert.Equal(t, tt.l, g.Limits())
				return
			}
			assert.EqualError(t, err, tt.wantErr)
			g, err := conngate.New(tt.l)
			assert.Nil(t, g)
			assert.EqualError(t, err, tt.wantErr)

			// SetLimits with invalid limits changes nothing.
			g, err = conngate.New(conngate.DefaultLimits())
			require.NoError(t, err)
			assert.EqualError(t, g.SetLimits(tt.l), tt.wantErr)
			assert.Equal(t, conngate.DefaultLimits(), g.Limits())
		})
	}
}

func TestReasonString(t *testing.T) {
	for _, tt := range []struct {
		r    conngate.Reason
		want string
	}{
		{conngate.ReasonNone, "none"},
		{conngate.ReasonConnectionLimit, "connection_limit"},
		{conngate.ReasonHandshakeLimit, "handshake_limit"},
		{conngate.ReasonHandshakePerAddress, "handshake_per_address"},
		{conngate.Reason(7), "Reason(7)"},
	} {
		assert.Equal(t, tt.want, tt.r.String())
	}
}
