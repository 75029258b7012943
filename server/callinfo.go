package server

import "context"

// CallInfo describes the call a handler serves.
type CallInfo struct {
	// Method is "service/method".
	Method string
	// ID is the request id on its connection.
	ID uint64
	// Generation is the number of the admission program that admitted the
	// call (kernel generations), 0 when admission was disabled when the
	// request was parsed.
	Generation uint64
	// OneWay is set for a one-way call.
	OneWay bool
}

// callCtx is a call's context: the cancel or timer context of the call,
// plus the call itself for CallInfoFromContext. It lives in the pooled
// call, so it costs no allocation.
type callCtx struct {
	context.Context
	cl *call
}

type callKey struct{}

func (c *callCtx) Value(key any) any {
	if key == (callKey{}) {
		return c.cl
	}
	return c.Context.Value(key)
}

// CallInfoFromContext describes the call whose handler got ctx (or a
// context derived from it). It is valid only while the handler runs.
func CallInfoFromContext(ctx context.Context) (CallInfo, bool) {
	cl, ok := ctx.Value(callKey{}).(*call)
	if !ok || cl == nil || cl.m == nil {
		return CallInfo{}, false
	}
	info := CallInfo{Method: cl.m.full, ID: cl.id, OneWay: cl.oneWay}
	if cl.admitted {
		info.Generation = cl.permit.Generation()
	}
	return info, true
}
