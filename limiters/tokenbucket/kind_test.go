package tokenbucket_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/limiters/tokenbucket"
	"github.com/sluicerpc/sluice/spi"
)

var validateTests = []struct {
	name      string
	params    spi.Params
	want      tokenbucket.Options
	wantParam string // "" when valid
	wantMsg   string
}{
	{"discrete", spi.Params{"tokenLimit": 10, "tokensPerPeriod": 2, "period": 1e9}, discrete(10, 2, time.Second), "", ""},
	{"continuous", spi.Params{"tokenLimit": 10, "tokensPerPeriod": 2, "period": 1e9, "continuous": 1}, continuous(10, 2, time.Second), "", ""},
	{"flags set to 0", spi.Params{"tokenLimit": 10, "tokensPerPeriod": 2, "period": 1e9, "continuous": 0, "unlimited": 0}, discrete(10, 2, time.Second), "", ""},
	{"unlimited", spi.Params{"tokenLimit": 10, "tokensPerPeriod": 2, "period": 1e9, "unlimited": 1}, unlimited(discrete(10, 2, time.Second)), "", ""},
	{"extremes", spi.Params{"tokenLimit": tokenbucket.MaxTokenLimit, "tokensPerPeriod": tokenbucket.MaxTokenLimit, "period": 1000}, discrete(tokenbucket.MaxTokenLimit, tokenbucket.MaxTokenLimit, time.Microsecond), "", ""},
	{"refill above the capacity", spi.Params{"tokenLimit": 1, "tokensPerPeriod": 5, "period": 1000}, discrete(1, 5, time.Microsecond), "", ""},
	{"continuous at the scale bound", spi.Params{"tokenLimit": 1 << 26, "tokensPerPeriod": 1, "period": 1 << 30, "continuous": 1}, continuous(1<<26, 1, 1<<30), "", ""},

	{"nil", nil, tokenbucket.Options{}, "period", "period: required"},
	{"missing tokenLimit", spi.Params{"tokensPerPeriod": 2, "period": 1e9}, tokenbucket.Options{}, "tokenLimit", "tokenLimit: required"},
	{"missing tokensPerPeriod", spi.Params{"tokenLimit": 10, "period": 1e9}, tokenbucket.Options{}, "tokensPerPeriod", "tokensPerPeriod: required"},
	{"unknown", spi.Params{"tokenLimit": 10, "tokensPerPeriod": 2, "period": 1e9, "burst": 3}, tokenbucket.Options{}, "burst",
		`burst: unknown parameter for kind "tokenbucket" (want continuous, period, tokenLimit, tokensPerPeriod, unlimited)`},
	{"several unknown: the first in sorted order", spi.Params{"zeta": 1, "alpha": 2, "mid": 3}, tokenbucket.Options{}, "alpha",
		`alpha: unknown parameter for kind "tokenbucket" (want continuous, period, tokenLimit, tokensPerPeriod, unlimited)`},
	{"unknown before invalid", spi.Params{"tokenLimit": 0, "Period": 1}, tokenbucket.Options{}, "Period",
		`Period: unknown parameter for kind "tokenbucket" (want continuous, period, tokenLimit, tokensPerPeriod, unlimited)`},
	{"several invalid: the first in sorted order", spi.Params{"tokenLimit": 0, "tokensPerPeriod": 0, "period": 1, "unlimited": 3}, tokenbucket.Options{}, "period",
		"period: must be at least 1µs (1000 ns), got 1"},
	{"zero tokenLimit", spi.Params{"tokenLimit": 0, "tokensPerPeriod": 2, "period": 1e9}, tokenbucket.Options{}, "tokenLimit", "tokenLimit: must be between 1 and 2147483647, got 0"},
	{"tokenLimit above max", spi.Params{"tokenLimit": 1 << 31, "tokensPerPeriod": 2, "period": 1e9}, tokenbucket.Options{}, "tokenLimit", "tokenLimit: must be between 1 and 2147483647, got 2147483648"},
	{"negative tokensPerPeriod", spi.Params{"tokenLimit": 10, "tokensPerPeriod": -2, "period": 1e9}, tokenbucket.Options{}, "tokensPerPeriod", "tokensPerPeriod: must be between 1 and 2147483647, got -2"},
	{"period below 1µs", spi.Params{"tokenLimit": 10, "tokensPerPeriod": 2, "period": 999}, tokenbucket.Options{}, "period", "period: must be at least 1µs (1000 ns), got 999"},
	{"negative period", spi.Params{"tokenLimit": 10, "tokensPerPeriod": 2, "period": -1e9}, tokenbucket.Options{}, "period", "period: must be at least 1µs (1000 ns), got -1000000000"},
	{"continuous flag 2", spi.Params{"tokenLimit": 10, "tokensPerPeriod": 2, "period": 1e9, "continuous": 2}, tokenbucket.Options{}, "continuous", "continuous: must be 0 or 1, got 2"},
	{"unlimited flag -1", spi.Params{"tokenLimit": 10, "tokensPerPeriod": 2, "period": 1e9, "unlimited": -1}, tokenbucket.Options{}, "unlimited", "unlimited: must be 0 or 1, got -1"},
	{"continuous beyond the scale bound", spi.Params{"tokenLimit": (1 << 26) + 1, "tokensPerPeriod": 1, "period": 1 << 30, "continuous": 1}, tokenbucket.Options{}, "period", ""},
	{"the same in discrete mode is fine", spi.Params{"tokenLimit": (1 << 26) + 1, "tokensPerPeriod": 1, "period": 1 << 30}, discrete((1<<26)+1, 1, 1<<30), "", ""},
}

func TestParseParams(t *testing.T) {
	for _, tt := range validateTests {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.params.Clone()
			o, err := tokenbucket.ParseParams(tt.params)
			assert.Equal(t, before, tt.params, "ParseParams does not change its argument")
			if tt.wantParam == "" {
				require.NoError(t, err)
				assert.Equal(t, tt.want, o)
				require.NoError(t, o.Validate())
				back, err := tokenbucket.ParseParams(o.Params())
				require.NoError(t, err)
				assert.Equal(t, o, back, "Params round-trips")
				return
			}
			var pe *spi.ParamError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, tt.wantParam, pe.Param)
			if tt.wantMsg != "" {
				assert.EqualError(t, err, tt.wantMsg)
			}
			for range 20 { // map order never changes the answer
				_, again := tokenbucket.ParseParams(tt.params)
				assert.Equal(t, err, again)
			}
		})
	}
}

func TestKind(t *testing.T) {
	var k spi.LimiterKind = tokenbucket.Kind{}
	assert.Equal(t, "tokenbucket", k.Name())
	assert.Equal(t, spi.ClassRate, k.Class())

	for _, tt := range validateTests {
		t.Run(tt.name, func(t *testing.T) {
			verr := k.Validate(tt.params)
			l, err := k.New(tt.params, t0)
			if tt.wantParam != "" {
				require.Error(t, verr)
				assert.Equal(t, verr, err, "New fails exactly as Validate does")
				assert.Nil(t, l, "no limiter (not even a typed nil) on error")
				return
			}
			require.NoError(t, verr)
			require.NoError(t, err)
			require.IsType(t, &tokenbucket.Limiter{}, l)
			limit := tt.params["tokenLimit"]
			assert.Equal(t, spi.Snapshot{Kind: "tokenbucket", Limit: limit, InUse: 0, Available: limit}, l.Snapshot(t0), "starts full")
		})
	}
}

func TestKindNewDoesNotKeepTheParams(t *testing.T) {
	p := tokenbucket.Spec(3, 1, time.Second).Params
	l, err := tokenbucket.Kind{}.New(p, t0)
	require.NoError(t, err)
	p["tokenLimit"] = 1
	assert.Equal(t, int64(3), l.Snapshot(t0).Limit)
}

func TestNewValidates(t *testing.T) {
	l, err := tokenbucket.New(discrete(0, 1, time.Second), t0)
	var pe *spi.ParamError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "tokenLimit", pe.Param)
	assert.Nil(t, l)
}

func TestSpecHelpers(t *testing.T) {
	assert.Equal(t, spi.Spec{Kind: "tokenbucket", Params: spi.Params{"tokenLimit": 100, "tokensPerPeriod": 10, "period": int64(100 * time.Millisecond)}},
		tokenbucket.Spec(100, 10, 100*time.Millisecond))
	assert.Equal(t, "tokenbucket{continuous=1 period=1000000000 tokenLimit=5 tokensPerPeriod=1}", tokenbucket.ContinuousSpec(5, 1, time.Second).String())
	assert.Equal(t, "tokenbucket{period=1000000000 tokenLimit=5 tokensPerPeriod=1 unlimited=1}", unlimited(discrete(5, 1, time.Second)).Spec().String())
	assert.True(t, tokenbucket.Spec(5, 1, time.Second).Equal(discrete(5, 1, time.Second).Spec()))

	s := tokenbucket.Spec(7, 1, time.Second)
	s.Params["tokenLimit"] = 1
	assert.Equal(t, int64(7), tokenbucket.Spec(7, 1, time.Second).Params["tokenLimit"], "each call returns its own params")

	_, err := spi.DefaultRegistry.Validate(tokenbucket.Spec(0, 1, time.Second))
	var pe *spi.ParamError
	require.ErrorAs(t, err, &pe, "Spec does not validate; the registry does")
}

func TestRegisteredInDefaultRegistry(t *testing.T) {
	k, err := spi.DefaultRegistry.Lookup("tokenbucket")
	require.NoError(t, err)
	assert.Equal(t, tokenbucket.Kind{}, k)
	assert.Contains(t, spi.DefaultRegistry.Names(), "tokenbucket")

	got, err := spi.DefaultRegistry.Validate(tokenbucket.ContinuousSpec(4, 1, time.Second))
	require.NoError(t, err)
	l, err := got.New(tokenbucket.ContinuousSpec(4, 1, time.Second).Params, t0)
	require.NoError(t, err)
	assert.Equal(t, int64(4), l.Snapshot(t0).Available)

	require.ErrorIs(t, spi.DefaultRegistry.Register(tokenbucket.Kind{}), spi.ErrDuplicateKind)
}
