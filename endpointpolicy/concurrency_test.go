package endpointpolicy_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/endpointpolicy"
	"github.com/sluicerpc/sluice/spi"
)

func TestEndpointConcurrencyLimitValidation(t *testing.T) {
	for _, n := range []int{0, -1, endpointpolicy.MaxEndpointConcurrency + 1} {
		_, err := endpointpolicy.NewEndpointConcurrency(n)
		assert.ErrorIs(t, err, endpointpolicy.ErrInvalidOptions, "limit %d", n)
		assert.ErrorContains(t, err, "limit is")
	}
	c, err := endpointpolicy.NewEndpointConcurrency(endpointpolicy.MaxEndpointConcurrency)
	require.NoError(t, err)
	require.NoError(t, c.SetLimit(1))
	assert.ErrorIs(t, c.SetLimit(0), endpointpolicy.ErrInvalidOptions)
	assert.Equal(t, 1, c.Limit(), "an invalid SetLimit changes nothing")
}

func TestEndpointConcurrencyLimit(t *testing.T) {
	c, err := endpointpolicy.NewEndpointConcurrency(2)
	require.NoError(t, err)
	d1, d2 := c.TryAcquire("a", "m"), c.TryAcquire("a", "m")
	require.True(t, d1.Allowed && d2.Allowed)
	assert.Equal(t, spi.EndpointDecision{}, c.TryAcquire("a", "m"))
	assert.True(t, c.TryAcquire("b", "m").Allowed, "endpoints are independent")
	c.Report(sendFailure, d1.Token)
	assert.Equal(t, 1, c.InFlight("a"))
	assert.True(t, c.TryAcquire("a", "m").Allowed)
	assert.Zero(t, c.InFlight("unknown"))
}

func TestEndpointConcurrencySetLimit(t *testing.T) {
	t.Run("shrink revokes nothing", func(t *testing.T) {
		c, err := endpointpolicy.NewEndpointConcurrency(3)
		require.NoError(t, err)
		var held []uint64
		for range 3 {
			d := c.TryAcquire("a", "m")
			require.True(t, d.Allowed)
			held = append(held, d.Token)
		}
		require.NoError(t, c.SetLimit(1))
		assert.Equal(t, 3, c.InFlight("a"))
		assert.False(t, c.TryAcquire("a", "m").Allowed)
		c.Report(success, held[0])
		c.Report(success, held[1])
		assert.False(t, c.TryAcquire("a", "m").Allowed, "1 in flight is not below 1")
		c.Report(success, held[2])
		assert.True(t, c.TryAcquire("a", "m").Allowed)
		assert.False(t, c.TryAcquire("a", "m").Allowed)
	})
	t.Run("grow admits exactly the difference", func(t *testing.T) {
		c, err := endpointpolicy.NewEndpointConcurrency(2)
		require.NoError(t, err)
		attemptsHeld(t, c, "a", 2)
		require.NoError(t, c.SetLimit(5))
		attemptsHeld(t, c, "a", 3)
		assert.False(t, c.TryAcquire("a", "m").Allowed)
		assert.Equal(t, 5, c.InFlight("a"))
	})
}

func attemptsHeld(t *testing.T, p spi.EndpointPolicy, ep string, n int) []uint64 {
	t.Helper()
	var toks []uint64
	for range n {
		d := p.TryAcquire(ep, "m")
		require.True(t, d.Allowed)
		toks = append(toks, d.Token)
	}
	return toks
}

// TestEndpointConcurrencyStress: many goroutines on a few endpoints, with
// duplicate reports and live resizes, never see more than the largest
// limit in flight, and every slot comes back.
func TestEndpointConcurrencyStress(t *testing.T) {
	const limit, workers, rounds = 4, 32, 2000
	c, err := endpointpolicy.NewEndpointConcurrency(limit)
	require.NoError(t, err)
	eps := []string{"a", "b", "c"}
	var inFlight [3]atomic.Int64
	var maxSeen [3]atomic.Int64
	var wg sync.WaitGroup
	stop := make(chan struct{})
	var resizer sync.WaitGroup
	resizer.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				assert.NoError(t, c.SetLimit(limit))
				return
			default:
			}
			assert.NoError(t, c.SetLimit(1+i%limit))
		}
	})
	for w := range workers {
		wg.Go(func() {
			for i := range rounds {
				e := (w + i) % len(eps)
				d := c.TryAcquire(eps[e], "m")
				if !d.Allowed {
					continue
				}
				n := inFlight[e].Add(1)
				for {
					m := maxSeen[e].Load()
					if n <= m || maxSeen[e].CompareAndSwap(m, n) {
						break
					}
				}
				inFlight[e].Add(-1)
				c.Report(success, d.Token)
				if i%7 == 0 {
					c.Report(success, d.Token) // duplicate
					c.Report(success, d.Token^uint64(i))
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	resizer.Wait()
	for e, name := range eps {
		assert.LessOrEqual(t, maxSeen[e].Load(), int64(limit), name)
		assert.Zero(t, c.InFlight(name), name)
		attemptsHeld(t, c, name, limit)
		assert.False(t, c.TryAcquire(name, "m").Allowed, fmt.Sprintf("%s: exactly the limit is free", name))
	}
}
