package endpointpolicy_test

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/endpointpolicy"
	"github.com/sluicerpc/sluice/spi"
)

func TestCircuitBreakerDefaults(t *testing.T) {
	require.NoError(t, endpointpolicy.CircuitBreakerOptions{}.Validate())
	b, err := endpointpolicy.NewCircuitBreaker(endpointpolicy.CircuitBreakerOptions{})
	require.NoError(t, err)
	o := b.Options()
	assert.Equal(t, 20, o.MinimumThroughput)
	assert.Equal(t, 0.5, o.FailureRatio)
	assert.Equal(t, 30*time.Second, o.SamplingDuration)
	assert.Equal(t, 10*time.Second, o.BreakDuration)
	assert.Equal(t, 1, o.HalfOpenMaxCalls)
	assert.Equal(t, spi.SystemClock{}, o.Clock)
	assert.Nil(t, o.IsFailure)
}

func TestCircuitBreakerOptionsValidate(t *testing.T) {
	cases := []struct {
		name  string
		o     endpointpolicy.CircuitBreakerOptions
		field string // "" = valid
	}{
		{"max values", endpointpolicy.CircuitBreakerOptions{MinimumThroughput: 1, FailureRatio: 1, SamplingDuration: 1, BreakDuration: 1, HalfOpenMaxCalls: 1}, ""},
		{"small ratio", endpointpolicy.CircuitBreakerOptions{FailureRatio: 1e-9}, ""},
		{"negative throughput", endpointpolicy.CircuitBreakerOptions{MinimumThroughput: -1}, "CircuitBreakerOptions.MinimumThroughput is -1"},
		{"ratio above 1", endpointpolicy.CircuitBreakerOptions{FailureRatio: 1.5}, "CircuitBreakerOptions.FailureRatio is 1.5"},
		{"negative ratio", endpointpolicy.CircuitBreakerOptions{FailureRatio: -0.1}, "CircuitBreakerOptions.FailureRatio is -0.1"},
		{"NaN ratio", endpointpolicy.CircuitBreakerOptions{FailureRatio: math.NaN()}, "CircuitBreakerOptions.FailureRatio is NaN"},
		{"negative sampling", endpointpolicy.CircuitBreakerOptions{SamplingDuration: -time.Second}, "CircuitBreakerOptions.SamplingDuration is -1s"},
		{"negative break", endpointpolicy.CircuitBreakerOptions{BreakDuration: -time.Second}, "CircuitBreakerOptions.BreakDuration is -1s"},
		{"negative half-open", endpointpolicy.CircuitBreakerOptions{HalfOpenMaxCalls: -2}, "CircuitBreakerOptions.HalfOpenMaxCalls is -2"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.o.Validate()
			_, nerr := endpointpolicy.NewCircuitBreaker(tc.o)
			if tc.field == "" {
				assert.NoError(t, err)
				assert.NoError(t, nerr)
				return
			}
			require.Error(t, err)
			assert.ErrorIs(t, err, endpointpolicy.ErrInvalidOptions)
			assert.Contains(t, err.Error(), tc.field)
			assert.Equal(t, err, nerr)
		})
	}
}

func TestCircuitBreakerOptionsValidateReportsEveryField(t *testing.T) {
	err := endpointpolicy.CircuitBreakerOptions{MinimumThroughput: -1, FailureRatio: 2, HalfOpenMaxCalls: -1}.Validate()
	require.Error(t, err)
	assert.True(t, errors.Is(err, endpointpolicy.ErrInvalidOptions))
	for _, f := range []string{"MinimumThroughput", "FailureRatio", "HalfOpenMaxCalls"} {
		assert.Contains(t, err.Error(), f)
	}
}

func TestDefaultIsFailure(t *testing.T) {
	cases := []struct {
		o    spi.AttemptOutcome
		want bool
	}{
		{success, false},
		{sendFailure, true},
		{spi.AttemptOutcome{Kind: spi.OutcomeConnectionClosed}, true},
		{spi.AttemptOutcome{Kind: spi.OutcomeDeadlineExceeded}, true},
		{goAway, false},
		{cancelled, false},
		{remote(2), true},   // Unknown
		{remote(4), true},   // DeadlineExceeded
		{remote(8), true},   // ResourceExhausted
		{remote(13), true},  // Internal
		{remote(14), true},  // Unavailable
		{remote(1), false},  // Cancelled (remote)
		{remote(3), false},  // InvalidArgument
		{remote(5), false},  // NotFound
		{remote(7), false},  // PermissionDenied
		{remote(12), false}, // Unimplemented
		{remote(16), false}, // Unauthenticated
		{spi.AttemptOutcome{}, false},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.want, endpointpolicy.DefaultIsFailure(tc.o), "%v code %d", tc.o.Kind, tc.o.Code)
	}
}

func TestCircuitStateString(t *testing.T) {
	assert.Equal(t, "closed", endpointpolicy.Closed.String())
	assert.Equal(t, "open", endpointpolicy.Open.String())
	assert.Equal(t, "half_open", endpointpolicy.HalfOpen.String())
	assert.Equal(t, "CircuitState(9)", endpointpolicy.CircuitState(9).String())
}
