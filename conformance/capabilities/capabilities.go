// Package capabilities describes a limiter kind to the conformance suite:
// how to parameterize it and what to expect from it. It imports only the
// standard library and spi, so that a kind's module and a plugin binary can
// declare capabilities without linking the suite (testing, rapid, testify).
package capabilities

import (
	"errors"
	"fmt"
	"time"

	"github.com/sluicerpc/sluice/spi"
)

// Limiter is what the conformance suite needs to know about a kind beyond
// the SPI. Class and Params are required; rate kinds also set Tick and
// Allowance.
type Limiter struct {
	// Class must equal Kind().Class().
	Class spi.Class

	// Params returns valid parameters whose limit is limit: the
	// concurrency limit, or for rate kinds the most units the limiter
	// grants at once (bucket capacity, window permit limit), as reported
	// by Snapshot.Limit. The suite calls it with limits from 1 up to the
	// int64 edge: it probes which large limits (100, 1000, ..., 2^31-1,
	// 2^32, 2^53, 2^62, math.MaxInt64) the kind's Validate accepts, finds
	// the largest by bisection, and holds the kind to every limit it
	// accepts (the kernel may publish any of them). A kind bounds its
	// limits by rejecting larger ones in Validate (or Params may panic for
	// a limit it cannot express). For rate kinds every call must describe
	// the same cadence (refill period, window length), so that
	// Params(a) -> Params(b) is a change of the limit only.
	Params func(limit int64) spi.Params

	// ReconfigureLimit reports that Reconfigure accepts a change from
	// Params(a) to Params(b). Without it the suite never reconfigures.
	ReconfigureLimit bool

	// AltParams, when not nil, returns valid parameters with the given
	// limit and a different cadence from Params (rate kinds: another
	// refill period or window length). The suite then also reconfigures
	// between the two cadences, in both directions.
	AltParams func(limit int64) spi.Params

	// RaiseFreesUnits says what raising the limit does at the instant of
	// the change. False: the limit is a capacity that only refill fills,
	// so a raise makes nothing available at once (token buckets, and
	// every concurrency kind is treated as if the held units were the
	// state). True: the state counts units taken, and a raise makes the
	// difference available at once (windows: the count carries, the
	// permit limit rises). It never allows more than the raise.
	RaiseFreesUnits bool

	// Tick (rate kinds) is a representative duration of the cadence of
	// Params and AltParams: the refill period or the window length. The
	// suite advances time by fractions and small multiples of it.
	Tick time.Duration

	// HintSlack (rate kinds) is how much later than the first instant a
	// retry can succeed a HintAt may be, by rounding. Zero means hints
	// are exact to the nanosecond.
	HintSlack time.Duration

	// Allowance (rate kinds) bounds the units that can become available
	// during (from, to] under parameters p whatever the state at from:
	// refill, windows opening, units expiring. It must be 0 when from ==
	// to. The suite checks that, from each publication P (New or
	// Reconfigure) to any later t with no publication between, the units
	// granted at instants in [P, t] never exceed
	//
	//	carried + raise + Allowance(p, P, t)
	//
	// where carried is Snapshot(P).Available just before the
	// publication (the limit for New), raise is the rise of the limit
	// if RaiseFreesUnits (else 0), and p the parameters published at P.
	// An Allowance that is too generous weakens that check; one that is
	// too strict makes a correct kind fail it. It saturates at
	// math.MaxInt64 (at large limits the true figure may not fit), which
	// the suite reads as no bound.
	Allowance func(p spi.Params, from, to time.Time) int64
}

// Validate reports what makes c unusable by the suite: a missing Params, or
// a rate kind without Allowance and a positive Tick. It cannot check c
// against a kind; the suite also checks that Class is the kind's class.
func (c Limiter) Validate() error {
	switch {
	case c.Class != spi.ClassConcurrency && c.Class != spi.ClassRate:
		return fmt.Errorf("capabilities: unknown class %v", c.Class)
	case c.Params == nil:
		return errors.New("capabilities: Params is nil")
	case c.Class == spi.ClassRate && (c.Allowance == nil || c.Tick <= 0):
		return errors.New("capabilities: a rate kind must set Allowance and a positive Tick")
	case c.HintSlack < 0:
		return fmt.Errorf("capabilities: negative HintSlack %v", c.HintSlack)
	}
	return nil
}
