package plugin_test

import (
	"sync"
	"testing"

	"github.com/sluicerpc/sluice/conformance"
	"github.com/sluicerpc/sluice/plugin"
	"github.com/sluicerpc/sluice/plugin/internal/testpolicy"
	"github.com/sluicerpc/sluice/spi"
)

// policyHarness runs the endpoint policy suite against a policy served by
// a plugin: every policy the suite asks for is a fresh instance in the
// plugin, running on the suite's clock (WithPolicyClock), closed with the
// harness.
type policyHarness struct {
	p     *plugin.Plugin
	name  string
	caps  conformance.EndpointPolicyCapabilities
	close func()

	mu   sync.Mutex
	made []*plugin.EndpointPolicyClient
}

func (h *policyHarness) NewPolicy(clock spi.Clock) (spi.EndpointPolicy, error) {
	ep, err := h.p.NewEndpointPolicy(h.name, plugin.WithPolicyClock(clock))
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	h.made = append(h.made, ep)
	h.mu.Unlock()
	return ep, nil
}

func (h *policyHarness) Capabilities() conformance.EndpointPolicyCapabilities { return h.caps }

func (h *policyHarness) Close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, ep := range h.made {
		_ = ep.Close()
	}
	if h.close != nil {
		h.close()
	}
}

// TestEndpointPolicyConformanceInProcess runs the endpoint policy suite
// through the gRPC bridge without a process.
func TestEndpointPolicyConformanceInProcess(t *testing.T) {
	conformance.RunEndpointPolicyTests(t, func(t *testing.T) (conformance.EndpointPolicyHarness, error) {
		p := plugin.ConnectInProcessConfig(t, plugin.ServeConfig{
			EndpointPolicies: []plugin.EndpointPolicyEntry{{Name: testpolicy.Name, New: testpolicy.New}},
			Logger:           quietLogger(),
		}, plugin.WithLogger(quietLogger()))
		return &policyHarness{p: p, name: testpolicy.Name, caps: testpolicy.Capabilities()}, nil
	})
}

// TestEndpointPolicyConformanceSubprocess runs the suite against the test
// plugin binary, with the capabilities the binary declares: every check
// gets its own plugin process.
func TestEndpointPolicyConformanceSubprocess(t *testing.T) {
	conformance.RunEndpointPolicyTests(t, func(t *testing.T) (conformance.EndpointPolicyHarness, error) {
		p, err := plugin.Open(pluginPath, plugin.WithLogger(quietLogger()))
		if err != nil {
			return nil, err
		}
		caps, ok := p.EndpointPolicyCapabilities(testpolicy.Name)
		if !ok {
			_ = p.Close()
			t.Fatalf("the test plugin declares no capabilities for %s", testpolicy.Name)
		}
		return &policyHarness{p: p, name: testpolicy.Name, caps: caps, close: func() { _ = p.Close() }}, nil
	})
}
