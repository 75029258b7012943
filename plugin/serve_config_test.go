package plugin_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/sluicerpc/sluice/conformance/capabilities"
	"github.com/sluicerpc/sluice/plugin"
	"github.com/sluicerpc/sluice/plugin/internal/testkind"
	"github.com/sluicerpc/sluice/spi"
)

// namedKind is testkind.Kind under another name and class.
type namedKind struct {
	testkind.Kind
	name  string
	class spi.Class
}

func (k namedKind) Name() string     { return k.name }
func (k namedKind) Class() spi.Class { return k.class }

func TestServeConfigValidate(t *testing.T) {
	good := testkind.Capabilities()
	rate := capabilities.Limiter{Class: spi.ClassRate, Params: testkind.Params, Tick: time.Second,
		Allowance: func(spi.Params, time.Time, time.Time) int64 { return 0 }}
	broken := good
	broken.Params = nil
	entry := func(k spi.LimiterKind, c *capabilities.Limiter) plugin.LimiterKindEntry {
		return plugin.LimiterKindEntry{Kind: k, Capabilities: c}
	}
	tests := []struct {
		name    string
		entries []plugin.LimiterKindEntry
		want    string // "" for valid
	}{
		{"one kind", []plugin.LimiterKindEntry{entry(testkind.Kind{}, nil)}, ""},
		{"with capabilities", []plugin.LimiterKindEntry{entry(testkind.Kind{}, &good)}, ""},
		{"two kinds", []plugin.LimiterKindEntry{entry(testkind.Kind{}, &good), entry(namedKind{name: "b", class: spi.ClassConcurrency}, nil)}, ""},
		{"none", nil, "no limiter kind"},
		{"nil kind", []plugin.LimiterKindEntry{entry(nil, nil)}, "Kind is nil"},
		{"empty name", []plugin.LimiterKindEntry{entry(namedKind{class: spi.ClassConcurrency}, nil)}, "empty name"},
		{"twice", []plugin.LimiterKindEntry{entry(testkind.Kind{}, nil), entry(testkind.Kind{}, nil)}, "served twice"},
		{"unknown class", []plugin.LimiterKindEntry{entry(namedKind{name: "x"}, nil)}, "unknown class"},
		{"invalid capabilities", []plugin.LimiterKindEntry{entry(testkind.Kind{}, &broken)}, "Params is nil"},
		{"capabilities of another class", []plugin.LimiterKindEntry{entry(testkind.Kind{}, &rate)}, "capabilities of class rate"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := plugin.ServeConfig{LimiterKinds: tt.entries}.Validate()
			if tt.want == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorContains(t, err, tt.want)
		})
	}
}
