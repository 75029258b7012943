package plugin

import (
	"time"

	"github.com/sluicerpc/sluice/conformance/capabilities"
	"github.com/sluicerpc/sluice/plugin/internal/pb"
	"github.com/sluicerpc/sluice/spi"
)

// Capabilities returns the conformance capabilities the plugin declared
// for k (LimiterKindEntry.Capabilities), and false if it declared none.
//
// The functions of the result (Params, AltParams, Allowance) run in the
// plugin: each call crosses the process boundary. They cannot return an
// error, so when the plugin cannot be reached they panic with an error
// wrapping ErrPluginUnavailable; the conformance suite reports such a panic
// as the failure of the check that made the call.
func (k *LimiterKindClient) Capabilities() (capabilities.Limiter, bool) {
	c := k.caps
	if c == nil {
		return capabilities.Limiter{}, false
	}
	caps := capabilities.Limiter{
		Class:            k.class,
		Params:           func(limit int64) spi.Params { return k.capabilityParams(limit, false) },
		ReconfigureLimit: c.GetReconfigureLimit(),
		RaiseFreesUnits:  c.GetRaiseFreesUnits(),
		Tick:             time.Duration(c.GetTickNanos()),
		HintSlack:        time.Duration(c.GetHintSlackNanos()),
	}
	if c.GetHasAltParams() {
		caps.AltParams = func(limit int64) spi.Params { return k.capabilityParams(limit, true) }
	}
	if k.class == spi.ClassRate {
		caps.Allowance = k.capabilityAllowance
	}
	return caps, true
}

func (k *LimiterKindClient) capabilityParams(limit int64, alt bool) spi.Params {
	c := k.p.watch.begin()
	defer c.end()
	r, err := k.p.rpc.CapabilityParams(c.ctx, &pb.CapabilityParamsRequest{Kind: k.name, Limit: limit, Alt: alt})
	if err != nil {
		panic(k.fail(c, "capability-params", err))
	}
	return fromParams(r)
}

func (k *LimiterKindClient) capabilityAllowance(p spi.Params, from, to time.Time) int64 {
	c := k.p.watch.begin()
	defer c.end()
	r, err := k.p.rpc.CapabilityAllowance(c.ctx, &pb.CapabilityAllowanceRequest{
		Kind: k.name, Params: toParams(p), From: toTime(from), To: toTime(to),
	})
	if err != nil {
		panic(k.fail(c, "capability-allowance", err))
	}
	return r.GetUnits()
}
