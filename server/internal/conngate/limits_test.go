package conngate_test

import (
	"testing"

	"github.com/sluicerpc/sluice/server/internal/conngate"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDefaultLimits(t *testing.T) {
	l := conngate.DefaultLimits()
	assert.Equal(t, conngate.Limits{MaxConnections: 1024, MaxHandshakes: 64}, l)
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
		{conngate.Reason(7), "Reason(7)"},
	} {
		assert.Equal(t, tt.want, tt.r.String())
	}
}
