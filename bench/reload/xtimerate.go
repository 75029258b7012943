package main

import (
	"time"

	"golang.org/x/time/rate"
)

// golang.org/x/time/rate, driven with explicit time: AllowN(now, 1),
// SetLimitAt(now, ...), SetBurstAt(now, ...). Its limiters hold no
// goroutine and read no clock.

// xBucket is an x/time/rate configuration: a rate in tokens per second and
// a burst.
type xBucket struct {
	limit rate.Limit
	burst int
}

// xAllow is the admission of every x/time/rate case: one AllowN at now on
// whatever limiter *lim is at that instant.
func xAllow(lim **rate.Limiter) func(time.Time) (bool, error) {
	return func(now time.Time) (bool, error) { return (*lim).AllowN(now, 1), nil }
}

// xNewLimiter changes the limit the way the package's constructor invites
// (and the way .NET's immutable limiters force): it builds a new limiter
// with the new parameters at P and sends traffic there. rate.NewLimiter
// starts full.
func xNewLimiter(from, to xBucket) func(*Clock) (Subject, error) {
	return func(*Clock) (Subject, error) {
		lim := rate.NewLimiter(from.limit, from.burst)
		return Subject{
			Admit: xAllow(&lim),
			Events: []Event{{At: Publish, Do: func(time.Time) error {
				lim = rate.NewLimiter(to.limit, to.burst)
				return nil
			}}},
		}, nil
	}
}

// xSetLimitBurst changes the limit in place at P: SetLimitAt then
// SetBurstAt, which first advance the bucket under the old parameters, so
// its tokens carry over.
func xSetLimitBurst(from, to xBucket) func(*Clock) (Subject, error) {
	return func(*Clock) (Subject, error) {
		lim := rate.NewLimiter(from.limit, from.burst)
		return Subject{
			Admit: xAllow(&lim),
			Events: []Event{{At: Publish, Do: func(now time.Time) error {
				lim.SetLimitAt(now, to.limit)
				lim.SetBurstAt(now, to.burst)
				return nil
			}}},
		}, nil
	}
}

// xInfToFinite runs from until off, then "disables" limiting the way
// x/time/rate users do, SetLimitAt(off, rate.Inf), lets the traffic run
// unlimited, and at P limits again: SetLimitAt(P, to.limit),
// SetBurstAt(P, to.burst). While the limit is Inf, AllowN grants without
// advancing the bucket, so the first SetLimitAt computes the refill of the
// whole Inf period at the Inf rate and fills the bucket.
func xInfToFinite(from xBucket, off time.Duration, to xBucket) func(*Clock) (Subject, error) {
	return func(*Clock) (Subject, error) {
		lim := rate.NewLimiter(from.limit, from.burst)
		return Subject{
			Admit: xAllow(&lim),
			Events: []Event{
				{At: off, Do: func(now time.Time) error {
					lim.SetLimitAt(now, rate.Inf)
					return nil
				}},
				{At: Publish, Do: func(now time.Time) error {
					lim.SetLimitAt(now, to.limit)
					lim.SetBurstAt(now, to.burst)
					return nil
				}},
			},
		}, nil
	}
}
