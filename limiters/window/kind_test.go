package window_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/limiters/window"
	"github.com/sluicerpc/sluice/spi"
)

type paramCase struct {
	name      string
	params    spi.Params
	wantParam string // "" when valid
	wantMsg   string
}

var fixedParamCases = []paramCase{
	{"nil", nil, "permitLimit", "permitLimit: required"},
	{"empty", spi.Params{}, "permitLimit", "permitLimit: required"},
	{"missing window", spi.Params{"permitLimit": 5}, "window", "window: required"},
	{"missing permitLimit", spi.Params{"window": 1e9}, "permitLimit", "permitLimit: required"},
	{"zero limit", spi.Params{"permitLimit": 0, "window": 1e9}, "permitLimit", "permitLimit: must be between 1 and 2147483647, got 0"},
	{"negative limit", spi.Params{"permitLimit": -1, "window": 1e9}, "permitLimit", "permitLimit: must be between 1 and 2147483647, got -1"},
	{"limit above max", spi.Params{"permitLimit": 1 << 31, "window": 1e9}, "permitLimit", "permitLimit: must be between 1 and 2147483647, got 2147483648"},
	{"window below 1us", spi.Params{"permitLimit": 1, "window": 999}, "window", "window: must be at least 1000ns (1µs), got 999"},
	{"zero window", spi.Params{"permitLimit": 1, "window": 0}, "window", "window: must be at least 1000ns (1µs), got 0"},
	{"negative window", spi.Params{"permitLimit": 1, "window": -1e9}, "window", "window: must be at least 1000ns (1µs), got -1000000000"},
	{"both wrong: the first name in sorted order", spi.Params{"window": 0, "permitLimit": 0}, "permitLimit", "permitLimit: must be between 1 and 2147483647, got 0"},
	{"unknown beside valid", spi.Params{"permitLimit": 1, "window": 1e9, "segments": 4}, "segments", `segments: unknown parameter for kind "fixedwindow" (want permitLimit, window)`},
	{"unknown sorts before an invalid one", spi.Params{"permitLimit": 0, "burst": 1, "window": 1e9}, "burst", `burst: unknown parameter for kind "fixedwindow" (want permitLimit, window)`},
	{"invalid sorts before an unknown one", spi.Params{"permitLimit": 0, "zeta": 1, "window": 1e9}, "permitLimit", "permitLimit: must be between 1 and 2147483647, got 0"},
	{"several unknown: sorted", spi.Params{"permitLimit": 1, "window": 1e9, "zz": 1, "aa": 1, "mm": 1}, "aa", `aa: unknown parameter for kind "fixedwindow" (want permitLimit, window)`},
	{"minimal", spi.Params{"permitLimit": 1, "window": 1000}, "", ""},
	{"typical", spi.Params{"permitLimit": 100, "window": 1e9}, "", ""},
	{"maximal", spi.Params{"permitLimit": window.MaxPermitLimit, "window": 1<<63 - 1}, "", ""},
}

var slidingParamCases = []paramCase{
	{"nil", nil, "permitLimit", "permitLimit: required"},
	{"missing segments", spi.Params{"permitLimit": 5, "window": 1e9}, "segments", "segments: required"},
	{"missing window", spi.Params{"permitLimit": 5, "segments": 4}, "window", "window: required"},
	{"one segment", spi.Params{"permitLimit": 5, "window": 1e9, "segments": 1}, "segments", "segments: must be between 2 and 4096, got 1"},
	{"too many segments", spi.Params{"permitLimit": 5, "window": 1e9, "segments": 4097}, "segments", "segments: must be between 2 and 4096, got 4097"},
	{"segments do not divide the window", spi.Params{"permitLimit": 5, "window": 1e9, "segments": 3}, "segments", "segments: must divide window (1000000000ns) exactly, got 3"},
	{"window too short, segments do not divide it either", spi.Params{"permitLimit": 5, "window": 999, "segments": 2}, "window", "window: must be at least 1000ns (1µs), got 999"},
	{"all wrong: the first name in sorted order", spi.Params{"permitLimit": 0, "window": 0, "segments": 0}, "permitLimit", "permitLimit: must be between 1 and 2147483647, got 0"},
	{"segments and window wrong", spi.Params{"permitLimit": 1, "window": 0, "segments": 0}, "segments", "segments: must be between 2 and 4096, got 0"},
	{"unknown", spi.Params{"permitLimit": 1, "window": 1e9, "segments": 4, "queue": 1}, "queue", `queue: unknown parameter for kind "slidingwindow" (want permitLimit, segments, window)`},
	{"minimal: 1ns segments", spi.Params{"permitLimit": 1, "window": 1000, "segments": 1000}, "", ""},
	{"typical", spi.Params{"permitLimit": 100, "window": 1e9, "segments": 10}, "", ""},
	{"max segments", spi.Params{"permitLimit": window.MaxPermitLimit, "window": 4096e6, "segments": 4096}, "", ""},
}

func TestKindValidate(t *testing.T) {
	for _, k := range []struct {
		kind  spi.LimiterKind
		cases []paramCase
	}{{window.FixedKind{}, fixedParamCases}, {window.SlidingKind{}, slidingParamCases}} {
		for _, tt := range k.cases {
			t.Run(k.kind.Name()+"/"+tt.name, func(t *testing.T) {
				before := tt.params.Clone()
				for range 5 { // the same answer whatever the map order
					err := k.kind.Validate(tt.params)
					assert.Equal(t, before, tt.params, "Validate does not change its argument")
					if tt.wantParam == "" {
						require.NoError(t, err)
						continue
					}
					require.EqualError(t, err, tt.wantMsg)
					var pe *spi.ParamError
					require.ErrorAs(t, err, &pe)
					assert.Equal(t, tt.wantParam, pe.Param)
				}
			})
		}
	}
}

func TestKindNew(t *testing.T) {
	for _, k := range []struct {
		kind  spi.LimiterKind
		cases []paramCase
		typ   any
	}{{window.FixedKind{}, fixedParamCases, &window.Fixed{}}, {window.SlidingKind{}, slidingParamCases, &window.Sliding{}}} {
		for _, tt := range k.cases {
			t.Run(k.kind.Name()+"/"+tt.name, func(t *testing.T) {
				l, err := k.kind.New(tt.params, at(0))
				if tt.wantParam != "" {
					require.EqualError(t, err, tt.wantMsg, "New fails exactly as Validate does")
					assert.Nil(t, l, "no limiter (not even a typed nil) on error")
					return
				}
				require.NoError(t, err)
				require.IsType(t, k.typ, l)
				limit := tt.params[window.ParamPermitLimit]
				requireSnapshot(t, l, 0, k.kind.Name(), limit, 0, limit)
				require.Implements(t, (*spi.Handover)(nil), l)
				require.Implements(t, (*spi.Inheritor)(nil), l)
			})
		}
	}
}

func TestKindNewStartsEmptyAtNow(t *testing.T) {
	// The windows are aligned to the creation instant, not to t0.
	f, err := window.FixedKind{}.New(window.FixedSpec(2, time.Second).Params, at(300*time.Millisecond))
	require.NoError(t, err)
	take(t, f, 300*time.Millisecond, 2)
	requireExactHint(t, f, 900*time.Millisecond, 1, 1300*time.Millisecond)

	s, err := window.SlidingKind{}.New(window.SlidingSpec(2, time.Second, 2).Params, at(300*time.Millisecond))
	require.NoError(t, err)
	take(t, s, 300*time.Millisecond, 2)
	requireExactHint(t, s, 900*time.Millisecond, 1, 1300*time.Millisecond)
}

func TestKindNewDoesNotRetainParams(t *testing.T) {
	p := window.SlidingSpec(1, time.Second, 2).Params
	l, err := window.SlidingKind{}.New(p, at(0))
	require.NoError(t, err)
	p[window.ParamPermitLimit] = 5
	assert.EqualValues(t, 1, l.Snapshot(at(0)).Limit)
}

func TestKindNamesAndClass(t *testing.T) {
	assert.Equal(t, "fixedwindow", window.FixedKind{}.Name())
	assert.Equal(t, "slidingwindow", window.SlidingKind{}.Name())
	assert.Equal(t, spi.ClassRate, window.FixedKind{}.Class())
	assert.Equal(t, spi.ClassRate, window.SlidingKind{}.Class())
	assert.Equal(t, "permitLimit", window.ParamPermitLimit)
	assert.Equal(t, "window", window.ParamWindow)
	assert.Equal(t, "segments", window.ParamSegments)
}

func TestSpecs(t *testing.T) {
	f := window.FixedSpec(10, time.Second)
	assert.Equal(t, spi.Spec{Kind: "fixedwindow", Params: spi.Params{"permitLimit": 10, "window": 1e9}}, f)
	assert.Equal(t, "fixedwindow{permitLimit=10 window=1000000000}", f.String())
	s := window.SlidingSpec(10, time.Second, 4)
	assert.Equal(t, spi.Spec{Kind: "slidingwindow", Params: spi.Params{"permitLimit": 10, "window": 1e9, "segments": 4}}, s)
	assert.Equal(t, "slidingwindow{permitLimit=10 segments=4 window=1000000000}", s.String())

	// Each call returns its own params.
	f.Params["permitLimit"] = 1
	assert.EqualValues(t, 10, window.FixedSpec(10, time.Second).Params["permitLimit"])

	// Specs do not validate; the registry does.
	_, err := spi.DefaultRegistry.Validate(window.SlidingSpec(10, time.Second, 3))
	var pe *spi.ParamError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "segments", pe.Param)
}

func TestRegisteredInDefaultRegistry(t *testing.T) {
	for _, k := range []spi.LimiterKind{window.FixedKind{}, window.SlidingKind{}} {
		got, err := spi.DefaultRegistry.Lookup(k.Name())
		require.NoError(t, err)
		assert.Equal(t, k, got)
		require.ErrorIs(t, spi.DefaultRegistry.Register(k), spi.ErrDuplicateKind)
	}
	names := spi.DefaultRegistry.Names()
	assert.Contains(t, names, "fixedwindow")
	assert.Contains(t, names, "slidingwindow")

	k, err := spi.DefaultRegistry.Validate(window.FixedSpec(3, time.Second))
	require.NoError(t, err)
	l, err := k.New(window.FixedSpec(3, time.Second).Params, at(0))
	require.NoError(t, err)
	assert.EqualValues(t, 3, l.Snapshot(at(0)).Limit)
}

func TestConstructorsPanicOnInvalidParams(t *testing.T) {
	assert.Equal(t, "window: permitLimit: must be between 1 and 2147483647, got 0",
		panicMessage(t, func() { window.NewFixed(0, time.Second, at(0)) }))
	assert.Equal(t, "window: window: must be at least 1000ns (1µs), got 1",
		panicMessage(t, func() { window.NewFixed(1, 1, at(0)) }))
	assert.Equal(t, "window: segments: must divide window (1000000000ns) exactly, got 7",
		panicMessage(t, func() { window.NewSliding(1, time.Second, 7, at(0)) }))
	assert.Equal(t, "window: segments: must be between 2 and 4096, got 1",
		panicMessage(t, func() { window.NewSliding(1, time.Second, 1, at(0)) }))
}
