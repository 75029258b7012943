package tokenbucket

import (
	"maps"
	"math/bits"
	"slices"
	"strings"
	"time"

	"github.com/sluicerpc/sluice/spi"
)

// Parameter names of the "tokenbucket" kind. Every value is an int64;
// ParamPeriod is in nanoseconds, the two flags are 0 or 1.
const (
	// ParamTokenLimit is the bucket capacity, in [1, MaxTokenLimit]. Required.
	ParamTokenLimit = "tokenLimit"
	// ParamTokensPerPeriod is the refill per period, in [1, MaxTokenLimit].
	// Required. A refill beyond the capacity is capped at the capacity.
	ParamTokensPerPeriod = "tokensPerPeriod"
	// ParamPeriod is the refill period in nanoseconds, at least MinPeriod.
	// Required.
	ParamPeriod = "period"
	// ParamContinuous selects continuous refill (1) instead of discrete
	// refill at period boundaries (0, the default).
	ParamContinuous = "continuous"
	// ParamUnlimited makes every TryAcquire succeed while the bucket keeps
	// counting (1), or limits normally (0, the default).
	ParamUnlimited = "unlimited"
)

const (
	// MaxTokenLimit is the largest capacity and the largest refill per
	// period.
	MaxTokenLimit = 1<<31 - 1
	// MinPeriod is the shortest refill period.
	MinPeriod = time.Microsecond
	// MaxContinuousScale bounds continuous mode: tokenLimit ×
	// period/gcd(period, tokensPerPeriod) must not exceed it. That product
	// is the bucket capacity in the exact fixed point a continuous bucket
	// counts in (1/(period/gcd) of a token), and it must leave room in 64
	// bits for debt. Discrete mode has no such bound.
	MaxContinuousScale = 1 << 56
)

// paramNames lists every parameter, sorted: validation reports problems in
// this order, so the error for a set with several problems is deterministic.
var paramNames = []string{ParamContinuous, ParamPeriod, ParamTokenLimit, ParamTokensPerPeriod, ParamUnlimited}

// Options are a token bucket's parameters in typed form. Options{} is not
// valid: TokenLimit, TokensPerPeriod and Period must be set.
type Options struct {
	// TokenLimit is the capacity: the most tokens the bucket holds, and
	// the most units one TryAcquire can take.
	TokenLimit int64
	// TokensPerPeriod is added every Period (discrete) or spread evenly
	// over each Period (continuous).
	TokensPerPeriod int64
	// Period is the refill period.
	Period time.Duration
	// Continuous selects the x/time/rate refill semantic: tokens accrue
	// continuously at TokensPerPeriod/Period. Otherwise (the .NET
	// TokenBucketRateLimiter semantic) TokensPerPeriod tokens are added at
	// once at every period boundary, boundaries aligned to the limiter's
	// origin.
	Continuous bool
	// Unlimited makes every TryAcquire succeed. The bucket keeps counting
	// what is taken (never below zero), so that a later change back to
	// limited starts from what the traffic left, not from a full bucket.
	Unlimited bool
}

// Params returns o as spi.Params. The flags are present only when set, so
// Options{...}.Params() equals what Spec and ContinuousSpec build.
func (o Options) Params() spi.Params {
	p := spi.Params{
		ParamTokenLimit:      o.TokenLimit,
		ParamTokensPerPeriod: o.TokensPerPeriod,
		ParamPeriod:          int64(o.Period),
	}
	if o.Continuous {
		p[ParamContinuous] = 1
	}
	if o.Unlimited {
		p[ParamUnlimited] = 1
	}
	return p
}

// Spec returns the spi.Spec of o, for rules.
func (o Options) Spec() spi.Spec { return spi.Spec{Kind: KindName, Params: o.Params()} }

// Validate checks o. The error is a *spi.ParamError naming the parameter;
// when several are wrong it names the first in sorted order.
func (o Options) Validate() error {
	if o.Period < MinPeriod {
		return spi.InvalidParam(ParamPeriod, "must be at least %v (%d ns), got %d", MinPeriod, int64(MinPeriod), int64(o.Period))
	}
	if err := checkCount(ParamTokenLimit, o.TokenLimit); err != nil {
		return err
	}
	if err := checkCount(ParamTokensPerPeriod, o.TokensPerPeriod); err != nil {
		return err
	}
	if o.Continuous {
		_, p := continuousRate(o.TokensPerPeriod, int64(o.Period))
		if hi, lo := bits.Mul64(uint64(o.TokenLimit), uint64(p)); hi != 0 || lo > MaxContinuousScale {
			return spi.InvalidParam(ParamPeriod,
				"continuous refill of %d tokens per %v cannot be counted exactly with %s %d: "+
					"%s × period/gcd(period, %s) must not exceed 2^56; use discrete refill, a smaller %s, or a period that is a multiple of a larger divisor of %s",
				o.TokensPerPeriod, o.Period, ParamTokenLimit, o.TokenLimit,
				ParamTokenLimit, ParamTokensPerPeriod, ParamTokenLimit, ParamTokensPerPeriod)
		}
	}
	return nil
}

func checkCount(name string, v int64) error {
	if v < 1 || v > MaxTokenLimit {
		return spi.InvalidParam(name, "must be between 1 and %d, got %d", MaxTokenLimit, v)
	}
	return nil
}

// ParseParams converts p to Options, validating it completely. Unknown
// names are an error. The error is a *spi.ParamError naming one parameter:
// the first unknown name in sorted order, otherwise the first invalid
// parameter in sorted order.
func ParseParams(p spi.Params) (Options, error) {
	for _, name := range slices.Sorted(maps.Keys(p)) {
		if !slices.Contains(paramNames, name) {
			return Options{}, spi.InvalidParam(name, "unknown parameter for kind %q (want %s)", KindName, strings.Join(paramNames, ", "))
		}
	}
	var o Options
	for _, name := range paramNames {
		v, ok := p[name]
		switch name {
		case ParamContinuous, ParamUnlimited:
			if !ok {
				continue
			}
			if v != 0 && v != 1 {
				return Options{}, spi.InvalidParam(name, "must be 0 or 1, got %d", v)
			}
			if name == ParamContinuous {
				o.Continuous = v == 1
			} else {
				o.Unlimited = v == 1
			}
		default:
			if !ok {
				return Options{}, spi.InvalidParam(name, "required")
			}
			if err := checkField(name, v); err != nil {
				return Options{}, err
			}
			switch name {
			case ParamPeriod:
				o.Period = time.Duration(v)
			case ParamTokenLimit:
				o.TokenLimit = v
			case ParamTokensPerPeriod:
				o.TokensPerPeriod = v
			}
		}
	}
	return o, o.Validate()
}

func checkField(name string, v int64) error {
	if name == ParamPeriod {
		if v < int64(MinPeriod) {
			return spi.InvalidParam(ParamPeriod, "must be at least %v (%d ns), got %d", MinPeriod, int64(MinPeriod), v)
		}
		return nil
	}
	return checkCount(name, v)
}

// continuousRate reduces tokensPerPeriod/period to q/p tokens per
// nanosecond in lowest terms.
func continuousRate(tokensPerPeriod, period int64) (q, p int64) {
	g := gcd(tokensPerPeriod, period)
	return tokensPerPeriod / g, period / g
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// cadenceChanged reports whether a change from o to n changes when tokens
// are added (period, tokens per period or mode), as opposed to only the
// capacity or the unlimited flag.
func (o Options) cadenceChanged(n Options) bool {
	return o.Period != n.Period || o.TokensPerPeriod != n.TokensPerPeriod || o.Continuous != n.Continuous
}
