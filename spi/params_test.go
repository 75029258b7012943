package spi_test

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/spi"
)

func TestParamsInt(t *testing.T) {
	p := spi.Params{"limit": 7, "zero": 0, "neg": -3}

	tests := []struct {
		name   string
		params spi.Params
		key    string
		want   int64
		wantOK bool
	}{
		{"set", p, "limit", 7, true},
		{"set to zero", p, "zero", 0, true},
		{"negative", p, "neg", -3, true},
		{"unset", p, "missing", 0, false},
		{"nil params", nil, "limit", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := tt.params.Int(tt.key)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.wantOK, ok)
		})
	}
}

func TestParamsDuration(t *testing.T) {
	p := spi.Params{
		"period":   int64(1500 * time.Millisecond),
		"zero":     0,
		"one":      1,
		"max":      math.MaxInt64,
		"negative": int64(-time.Second),
	}

	tests := []struct {
		key    string
		want   time.Duration
		wantOK bool
	}{
		{"period", 1500 * time.Millisecond, true},
		{"zero", 0, true},
		{"one", time.Nanosecond, true},
		{"max", time.Duration(math.MaxInt64), true},
		{"negative", -time.Second, true},
		{"missing", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			got, ok := p.Duration(tt.key)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, tt.wantOK, ok)
		})
	}

	got, ok := spi.Params(nil).Duration("period")
	assert.Zero(t, got)
	assert.False(t, ok)

	// Durations are stored as nanoseconds, so Int and Duration agree.
	n, _ := p.Int("period")
	d, _ := p.Duration("period")
	assert.Equal(t, time.Duration(n), d)
}

func TestParamsClone(t *testing.T) {
	t.Run("independent copies", func(t *testing.T) {
		orig := spi.Params{"a": 1, "b": 2}
		clone := orig.Clone()
		require.True(t, clone.Equal(orig))

		clone["a"] = 100
		clone["c"] = 3
		delete(clone, "b")
		assert.Equal(t, spi.Params{"a": 1, "b": 2}, orig, "changing the clone leaves the original")

		orig["d"] = 4
		orig["a"] = -1
		assert.Equal(t, spi.Params{"a": 100, "c": 3}, clone, "changing the original leaves the clone")
	})

	t.Run("nil stays nil", func(t *testing.T) {
		var p spi.Params
		c := p.Clone()
		assert.Nil(t, c)
		assert.True(t, c.Equal(p))
	})

	t.Run("empty is a new empty map", func(t *testing.T) {
		p := spi.Params{}
		c := p.Clone()
		require.NotNil(t, c)
		assert.Empty(t, c)
		c["x"] = 1
		assert.Empty(t, p)
	})
}

func TestParamsEqual(t *testing.T) {
	tests := []struct {
		name string
		p, q spi.Params
		want bool
	}{
		{"both nil", nil, nil, true},
		{"nil and empty", nil, spi.Params{}, true},
		{"same", spi.Params{"a": 1, "b": 2}, spi.Params{"b": 2, "a": 1}, true},
		{"different value", spi.Params{"a": 1}, spi.Params{"a": 2}, false},
		{"different name", spi.Params{"a": 1}, spi.Params{"b": 1}, false},
		{"subset", spi.Params{"a": 1}, spi.Params{"a": 1, "b": 2}, false},
		{"explicit zero is not absent", spi.Params{"a": 0}, spi.Params{}, false},
		{"nil and non-empty", nil, spi.Params{"a": 0}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.p.Equal(tt.q))
			assert.Equal(t, tt.want, tt.q.Equal(tt.p), "Equal is symmetric")
		})
	}
}

func TestParamsString(t *testing.T) {
	tests := []struct {
		name string
		p    spi.Params
		want string
	}{
		{"nil", nil, "{}"},
		{"empty", spi.Params{}, "{}"},
		{"one", spi.Params{"limit": 10}, "{limit=10}"},
		{"sorted by name", spi.Params{"zeta": 1, "alpha": -2, "mid": 3, "Upper": 4}, "{Upper=4 alpha=-2 mid=3 zeta=1}"},
		{"duration in nanoseconds", spi.Params{"period": int64(time.Second)}, "{period=1000000000}"},
		{"extremes", spi.Params{"max": math.MaxInt64, "min": math.MinInt64}, "{max=9223372036854775807 min=-9223372036854775808}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.p.String())
		})
	}

	// Rendering is stable across calls despite random map iteration.
	p := spi.Params{"e": 5, "d": 4, "c": 3, "b": 2, "a": 1, "f": 6, "g": 7, "h": 8}
	for range 50 {
		require.Equal(t, "{a=1 b=2 c=3 d=4 e=5 f=6 g=7 h=8}", p.String())
	}
}

func TestSpecEqual(t *testing.T) {
	base := spi.Spec{Kind: "concurrency", Params: spi.Params{"limit": 3}}
	tests := []struct {
		name  string
		other spi.Spec
		want  bool
	}{
		{"identical", spi.Spec{Kind: "concurrency", Params: spi.Params{"limit": 3}}, true},
		{"cloned params", spi.Spec{Kind: "concurrency", Params: base.Params.Clone()}, true},
		{"different kind", spi.Spec{Kind: "tokenbucket", Params: spi.Params{"limit": 3}}, false},
		{"different value", spi.Spec{Kind: "concurrency", Params: spi.Params{"limit": 4}}, false},
		{"extra param", spi.Spec{Kind: "concurrency", Params: spi.Params{"limit": 3, "x": 0}}, false},
		{"no params", spi.Spec{Kind: "concurrency"}, false},
		{"zero spec", spi.Spec{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, base.Equal(tt.other))
			assert.Equal(t, tt.want, tt.other.Equal(base), "Equal is symmetric")
		})
	}

	assert.True(t, spi.Spec{}.Equal(spi.Spec{}))
	assert.True(t, spi.Spec{Kind: "k"}.Equal(spi.Spec{Kind: "k", Params: spi.Params{}}), "nil and empty params are equal")
}

func TestSpecString(t *testing.T) {
	tests := []struct {
		spec spi.Spec
		want string
	}{
		{spi.Spec{Kind: "concurrency", Params: spi.Params{"limit": 3}}, "concurrency{limit=3}"},
		{spi.Spec{Kind: "tokenbucket", Params: spi.Params{"rate": 100, "burst": 10}}, "tokenbucket{burst=10 rate=100}"},
		{spi.Spec{Kind: "example.com/gcra"}, "example.com/gcra{}"},
		{spi.Spec{}, "{}"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.spec.String())
		})
	}
}
