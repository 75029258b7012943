package capabilities_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/sluicerpc/sluice/conformance/capabilities"
	"github.com/sluicerpc/sluice/spi"
)

func TestValidate(t *testing.T) {
	params := func(limit int64) spi.Params { return spi.Params{"limit": limit} }
	allowance := func(spi.Params, time.Time, time.Time) int64 { return 0 }
	tests := []struct {
		name string
		caps capabilities.Limiter
		want string // "" for valid
	}{
		{"concurrency", capabilities.Limiter{Class: spi.ClassConcurrency, Params: params}, ""},
		{"rate", capabilities.Limiter{Class: spi.ClassRate, Params: params, Tick: time.Second, Allowance: allowance}, ""},
		{"no class", capabilities.Limiter{Params: params}, "unknown class"},
		{"no params", capabilities.Limiter{Class: spi.ClassConcurrency}, "Params is nil"},
		{"rate without allowance", capabilities.Limiter{Class: spi.ClassRate, Params: params, Tick: time.Second}, "Allowance"},
		{"rate without tick", capabilities.Limiter{Class: spi.ClassRate, Params: params, Allowance: allowance}, "positive Tick"},
		{"negative slack", capabilities.Limiter{Class: spi.ClassConcurrency, Params: params, HintSlack: -1}, "negative HintSlack"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.caps.Validate()
			if tt.want == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorContains(t, err, tt.want)
		})
	}
}

func TestEndpointPolicyValidate(t *testing.T) {
	assert.NoError(t, capabilities.EndpointPolicy{}.Validate())
	assert.NoError(t, capabilities.EndpointPolicy{Deterministic: true, Bounded: 4}.Validate())
	assert.NoError(t, capabilities.EndpointPolicy{Bounded: capabilities.MaxBounded}.Validate())
	assert.ErrorContains(t, capabilities.EndpointPolicy{Bounded: -1}.Validate(), "negative Bounded")
	assert.ErrorContains(t, capabilities.EndpointPolicy{Bounded: capabilities.MaxBounded + 1}.Validate(), "above")
}
