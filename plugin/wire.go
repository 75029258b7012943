package plugin

import (
	"math"
	"time"

	"github.com/sluicerpc/sluice/plugin/internal/pb"
	"github.com/sluicerpc/sluice/spi"
)

// panicPrefix marks a status message that carries a panic of the served
// implementation; the host re-raises it.
const panicPrefix = "sluice-plugin-panic: "

// The instants the wire can carry: int64 nanoseconds since 1970, from
// the year 1677 to 2262.
var (
	earliestWireTime = time.Unix(0, math.MinInt64)
	latestWireTime   = time.Unix(0, math.MaxInt64)
)

// toTime encodes t, saturating an instant the wire cannot carry to the
// nearest one it can: a RetryAt centuries away (a kind asked for a huge
// number of units) stays in the future. t.UnixNano alone wraps there, and
// a hint after 2262 crossed the bridge as one in 1737: "retry now".
func toTime(t time.Time) *pb.Time {
	switch {
	case t.IsZero():
		return &pb.Time{}
	case t.After(latestWireTime):
		return &pb.Time{Set: true, UnixNano: math.MaxInt64}
	case t.Before(earliestWireTime):
		return &pb.Time{Set: true, UnixNano: math.MinInt64}
	}
	return &pb.Time{Set: true, UnixNano: t.UnixNano()}
}

func fromTime(t *pb.Time) time.Time {
	if !t.GetSet() {
		return time.Time{}
	}
	return time.Unix(0, t.GetUnixNano())
}

func toParams(p spi.Params) *pb.ParamsMsg {
	return &pb.ParamsMsg{Values: p}
}

func fromParams(m *pb.ParamsMsg) spi.Params {
	v := m.GetValues()
	if v == nil {
		return spi.Params{}
	}
	return spi.Params(v)
}

func toError(err error) *pb.Error {
	if err == nil {
		return nil
	}
	e := &pb.Error{Message: err.Error()}
	if pe, ok := err.(*spi.ParamError); ok {
		e.ParamError, e.Param, e.Reason = true, pe.Param, pe.Reason
	}
	return e
}

// fromError rebuilds an application error of the served kind. A
// *spi.ParamError crosses as a *spi.ParamError; anything else as a
// *RemoteError.
func fromError(e *pb.Error) error {
	if e == nil {
		return nil
	}
	if e.GetParamError() {
		return &spi.ParamError{Param: e.GetParam(), Reason: e.GetReason()}
	}
	return &RemoteError{Message: e.GetMessage()}
}

// RemoteError is an error the plugin's implementation returned, other than
// a *spi.ParamError; its text crosses the boundary, and for a codec the
// contract error it wrapped (spi.ErrDecodedTooLarge, spi.ErrCorrupt,
// context.Canceled, context.DeadlineExceeded) as Cause, so that errors.Is
// recognizes it in the host.
type RemoteError struct {
	Message string
	// Cause is the contract error the plugin's error wrapped, or nil.
	Cause error
}

func (e *RemoteError) Error() string { return e.Message }

// Unwrap returns Cause.
func (e *RemoteError) Unwrap() error { return e.Cause }

func toDecision(d spi.Decision) *pb.DecisionReply {
	r := &pb.DecisionReply{Granted: d.Granted, Hint: uint32(d.Hint)}
	if !d.RetryAt.IsZero() {
		r.RetryAt = toTime(d.RetryAt)
	}
	return r
}

func fromDecision(r *pb.DecisionReply) spi.Decision {
	return spi.Decision{Granted: r.GetGranted(), Hint: spi.Hint(r.GetHint()), RetryAt: fromTime(r.GetRetryAt())}
}
