package client

import (
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sluicerpc/sluice/spi"
)

type allowAll struct{ n atomic.Uint64 }

func (p *allowAll) TryAcquire(string, string) spi.EndpointDecision {
	return spi.EndpointDecision{Allowed: true, Token: p.n.Add(1)}
}
func (p *allowAll) Report(spi.AttemptOutcome, uint64) {}

// TestPolicyPathAllocatesNothing: the disabled path is one atomic load and
// no allocation; a custom policy's admit and report allocate nothing
// either.
func TestPolicyPathAllocatesNothing(t *testing.T) {
	var pc policyControl
	pc.logf = func(string, ...any) {}
	disabled := testing.AllocsPerRun(1000, func() {
		if _, held, err := pc.admit(1, "127.0.0.1:1", "echo/Echo"); held || err != nil {
			t.Fatal("disabled admitted")
		}
	})
	assert.Zero(t, disabled)

	_, err := pc.publish(PolicyCustom, &allowAll{}, nil, func(PolicyMode) error { return nil })
	assert.NoError(t, err)
	custom := testing.AllocsPerRun(1000, func() {
		a, held, err := pc.admit(1, "127.0.0.1:1", "echo/Echo")
		if !held || err != nil {
			t.Fatal("custom refused")
		}
		pc.report(a, outcomeSuccess, nil, false)
	})
	assert.Zero(t, custom)
}
