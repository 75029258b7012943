package spi_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/spi"
)

func TestMonotonicClockAdvancesWithTheMonotonicClock(t *testing.T) {
	before := time.Now()
	c := spi.NewMonotonicClock()
	a := c.Now()
	time.Sleep(2 * time.Millisecond) // real time has to pass for this check
	b := c.Now()
	after := time.Now()
	require.False(t, b.Before(a))
	require.GreaterOrEqual(t, b.Sub(a), 2*time.Millisecond)
	require.LessOrEqual(t, b.Sub(a), after.Sub(before))
	require.False(t, a.Before(before))
}

func BenchmarkClocks(b *testing.B) {
	var sink time.Time
	b.Run("system", func(b *testing.B) {
		var c spi.Clock = spi.SystemClock{}
		for b.Loop() {
			sink = c.Now()
		}
	})
	b.Run("monotonic", func(b *testing.B) {
		var c spi.Clock = spi.NewMonotonicClock()
		for b.Loop() {
			sink = c.Now()
		}
	})
	_ = sink
}
