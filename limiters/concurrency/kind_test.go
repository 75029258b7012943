package concurrency_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/limiters/concurrency"
	"github.com/sluicerpc/sluice/spi"
)

var validateTests = []struct {
	name      string
	params    spi.Params
	wantParam string // "" when valid
	wantMsg   string
}{
	{"missing limit (nil)", nil, "limit", "limit: required"},
	{"missing limit (empty)", spi.Params{}, "limit", "limit: required"},
	{"unknown param only", spi.Params{"burst": 3}, "burst", `burst: unknown parameter for kind "concurrency" (want only "limit")`},
	{"unknown param beside a valid limit", spi.Params{"limit": 3, "rate": 1}, "rate", `rate: unknown parameter for kind "concurrency" (want only "limit")`},
	{"unknown param beside an invalid limit", spi.Params{"limit": 0, "Limit": 1}, "Limit", `Limit: unknown parameter for kind "concurrency" (want only "limit")`},
	{"zero", spi.Params{"limit": 0}, "limit", "limit: must be between 1 and 2147483647, got 0"},
	{"negative", spi.Params{"limit": -1}, "limit", "limit: must be between 1 and 2147483647, got -1"},
	{"MaxLimit+1", spi.Params{"limit": concurrency.MaxLimit + 1}, "limit", "limit: must be between 1 and 2147483647, got 2147483648"},
	{"one", spi.Params{"limit": 1}, "", ""},
	{"typical", spi.Params{"limit": 64}, "", ""},
	{"MaxLimit", spi.Params{"limit": concurrency.MaxLimit}, "", ""},
}

func TestKindValidate(t *testing.T) {
	for _, tt := range validateTests {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.params.Clone()
			err := concurrency.Kind{}.Validate(tt.params)
			assert.Equal(t, before, tt.params, "Validate does not change its argument")
			if tt.wantParam == "" {
				require.NoError(t, err)
				return
			}
			require.EqualError(t, err, tt.wantMsg)
			var pe *spi.ParamError
			require.ErrorAs(t, err, &pe)
			assert.Equal(t, tt.wantParam, pe.Param)
		})
	}
}

func TestKindNew(t *testing.T) {
	for _, tt := range validateTests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := concurrency.Kind{}.New(tt.params, time.Now())
			if tt.wantParam != "" {
				require.EqualError(t, err, tt.wantMsg, "New fails exactly as Validate does")
				assert.Nil(t, l, "no limiter (not even a typed nil) on error")
				var pe *spi.ParamError
				require.ErrorAs(t, err, &pe)
				return
			}
			require.NoError(t, err)
			require.IsType(t, &concurrency.Limiter{}, l)
			limit := tt.params[concurrency.ParamLimit]
			assert.Equal(t, spi.Snapshot{Kind: "concurrency", Limit: limit, InUse: 0, Available: limit}, l.Snapshot(time.Time{}))
		})
	}
}

func TestKindNewBuildsIndependentLimiters(t *testing.T) {
	p := spi.Params{"limit": 1}
	a, err := concurrency.Kind{}.New(p, time.Time{})
	require.NoError(t, err)
	b, err := concurrency.Kind{}.New(p, time.Time{})
	require.NoError(t, err)

	require.True(t, a.TryAcquire(time.Time{}, 1).Granted)
	require.True(t, b.TryAcquire(time.Time{}, 1).Granted, "b has its own budget")

	p["limit"] = 5
	assert.EqualValues(t, 1, a.Snapshot(time.Time{}).Limit, "the limiter does not keep the params map")
}

func TestKindNameAndClass(t *testing.T) {
	var k spi.LimiterKind = concurrency.Kind{}
	assert.Equal(t, "concurrency", k.Name())
	assert.Equal(t, concurrency.KindName, k.Name())
	assert.Equal(t, spi.ClassConcurrency, k.Class())
	assert.Equal(t, "limit", concurrency.ParamLimit)
}

func TestSpec(t *testing.T) {
	s := concurrency.Spec(7)
	assert.Equal(t, spi.Spec{Kind: "concurrency", Params: spi.Params{"limit": 7}}, s)
	assert.True(t, s.Equal(spi.Spec{Kind: "concurrency", Params: spi.Params{"limit": 7}}))
	assert.False(t, s.Equal(concurrency.Spec(8)))
	assert.Equal(t, "concurrency{limit=7}", s.String())

	// Each call returns its own params.
	s.Params["limit"] = 1
	assert.Equal(t, spi.Params{"limit": 7}, concurrency.Spec(7).Params)

	// Spec does not validate; the registry does.
	bad := concurrency.Spec(0)
	_, err := spi.DefaultRegistry.Validate(bad)
	var pe *spi.ParamError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "limit", pe.Param)
}

func TestRegisteredInDefaultRegistry(t *testing.T) {
	k, err := spi.DefaultRegistry.Lookup("concurrency")
	require.NoError(t, err)
	assert.Equal(t, concurrency.Kind{}, k)
	assert.Equal(t, spi.ClassConcurrency, k.Class())
	assert.Contains(t, spi.DefaultRegistry.Names(), "concurrency")

	// The registry validates and builds through the kind.
	got, err := spi.DefaultRegistry.Validate(concurrency.Spec(4))
	require.NoError(t, err)
	assert.Equal(t, concurrency.Kind{}, got)
	l, err := got.New(concurrency.Spec(4).Params, time.Time{})
	require.NoError(t, err)
	assert.EqualValues(t, 4, l.Snapshot(time.Time{}).Limit)

	// A second registration of the name is refused and leaves the first.
	require.ErrorIs(t, spi.DefaultRegistry.Register(concurrency.Kind{}), spi.ErrDuplicateKind)
	k2, err := spi.DefaultRegistry.Lookup("concurrency")
	require.NoError(t, err)
	assert.Equal(t, k, k2)
}
