package conformance

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestHarnessOf(t *testing.T) {
	fake := semHarness(semFaults{})
	var closed []int
	h := HarnessOf(fake.kind, fake.caps, func() { closed = append(closed, 1) }, func() { closed = append(closed, 2) })
	assert.Equal(t, fake.kind.Name(), h.Kind().Name())
	assert.Equal(t, fake.caps.Class, h.Capabilities().Class)
	assert.Empty(t, closed)
	h.Close()
	assert.Equal(t, []int{1, 2}, closed)
	HarnessOf(fake.kind, fake.caps).Close() // no closers: nothing to do

	RunLimiterTests(t, func(*testing.T) (LimiterHarness, error) { return HarnessOf(fake.kind, fake.caps), nil })
}
