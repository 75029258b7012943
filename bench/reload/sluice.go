package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sluicerpc/sluice/kernel"
	"github.com/sluicerpc/sluice/spi"

	// Importing the limiter packages registers their kinds in
	// spi.DefaultRegistry, which the kernel resolves specs with.
	"github.com/sluicerpc/sluice/limiters/tokenbucket"
	"github.com/sluicerpc/sluice/limiters/window"
)

// sluiceUpdate is sluice's way of changing a limit: a kernel over a
// one-method catalog on the simulated clock is enabled at T0 with a Global
// rule holding the single rate limit from and no queue (a refusal is
// immediate), and at P the complete candidate with the Global rule to is
// published by Update(k.Generation(), ...). Every admission is a request as
// a server runs it: Capture, Admit, Release.
func sluiceUpdate(from, to spi.Spec) func(*Clock) (Subject, error) {
	return func(clock *Clock) (Subject, error) {
		s, err := newSluiceSubject(clock, from)
		if err != nil {
			return Subject{}, err
		}
		s.sub.Events = []Event{{At: Publish, Do: func(now time.Time) error {
			gen := s.k.Generation()
			got, err := s.k.Update(gen, globalRate(to))
			if err != nil {
				return fmt.Errorf("sluice: Update: %w", err)
			}
			if got != gen+1 {
				return fmt.Errorf("sluice: Update published generation %d, want %d", got, gen+1)
			}
			return checkInForce(s.k, to)
		}}}
		return s.sub, nil
	}
}

// sluiceDisableEnable turns admission off and on again at P with the same
// rule, after the disabled kernel has reclaimed everything it can (Stats
// sweeps, and nothing holds the old program): the rate state must come back
// with the quota it had consumed, not full.
func sluiceDisableEnable(spec spi.Spec) func(*Clock) (Subject, error) {
	return func(clock *Clock) (Subject, error) {
		s, err := newSluiceSubject(clock, spec)
		if err != nil {
			return Subject{}, err
		}
		s.sub.Events = []Event{{At: Publish, Do: func(now time.Time) error {
			if _, err := s.k.Disable(); err != nil {
				return fmt.Errorf("sluice: Disable: %w", err)
			}
			if st := s.k.Stats(); st.LivePrograms != 0 {
				return fmt.Errorf("sluice: %d programs still live after Disable", st.LivePrograms)
			}
			if _, err := s.k.Enable(globalRate(spec)); err != nil {
				return fmt.Errorf("sluice: Enable: %w", err)
			}
			return checkInForce(s.k, spec)
		}}}
		return s.sub, nil
	}
}

// sluiceNewKernel changes the limit the way a user who does not trust live
// updates would: a new kernel with the new configuration at P. It is not a
// case of the experiment (sluice's users change limits with Update); the
// test uses it to show that the sluice harness sees a free burst when there
// is one.
func sluiceNewKernel(from, to spi.Spec) func(*Clock) (Subject, error) {
	return func(clock *Clock) (Subject, error) {
		cur, err := newSluiceSubject(clock, from)
		if err != nil {
			return Subject{}, err
		}
		return Subject{
			Admit: func(now time.Time) (bool, error) { return cur.admit(now) },
			Events: []Event{{At: Publish, Do: func(time.Time) error {
				if err := cur.close(); err != nil {
					return err
				}
				next, err := newSluiceSubject(clock, to)
				if err != nil {
					return err
				}
				cur = next
				return nil
			}}},
			Close: func() error { return cur.close() },
		}, nil
	}
}

type sluiceSubject struct {
	k     *kernel.Kernel
	clock *Clock
	req   kernel.Request
	p     kernel.Permit
	sub   Subject
}

func newSluiceSubject(clock *Clock, spec spi.Spec) (*sluiceSubject, error) {
	var cb kernel.CatalogBuilder
	m := cb.MustAdd("reload", "Op")
	k, err := kernel.New(kernel.Config{Catalog: cb.Build(), Clock: clock})
	if err != nil {
		return nil, err
	}
	if _, err := k.Enable(globalRate(spec)); err != nil {
		return nil, fmt.Errorf("sluice: Enable: %w", err)
	}
	if err := checkInForce(k, spec); err != nil {
		return nil, err
	}
	s := &sluiceSubject{k: k, clock: clock, req: kernel.Request{Method: m}}
	s.sub = Subject{Admit: s.admit, Close: s.close}
	return s, nil
}

func globalRate(spec spi.Spec) kernel.Options {
	return kernel.Options{Global: kernel.Rule{Limits: []spi.Spec{spec}}}
}

// admit runs one request. The kernel reads the time from clock (the
// simulated clock, which the driver has set to now).
func (s *sluiceSubject) admit(now time.Time) (bool, error) {
	if !s.clock.Now().Equal(now) {
		return false, fmt.Errorf("sluice: clock reads %v, the driver is at %v", s.clock.Now(), now)
	}
	if !s.k.Capture(&s.p) {
		return false, errors.New("sluice: Capture: admission is disabled")
	}
	err := s.p.Admit(context.Background(), s.req)
	s.p.Release()
	if err == nil {
		return true, nil
	}
	if r, ok := kernel.ReasonOf(err); ok && r == kernel.ReasonRate {
		return false, nil
	}
	return false, fmt.Errorf("sluice: Admit: %w", err)
}

// close checks that the kernel's accounting is clean, then seals and
// drains it.
func (s *sluiceSubject) close() error {
	st := s.k.Stats()
	var errs []error
	for _, sc := range st.Scopes {
		if sc.Waiters != 0 {
			errs = append(errs, fmt.Errorf("sluice: scope %s left with %d waiters", sc.Name, sc.Waiters))
		}
	}
	if st.DoubleReleases != 0 {
		errs = append(errs, fmt.Errorf("sluice: %d double releases", st.DoubleReleases))
	}
	s.k.Seal()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.k.Drain(ctx); err != nil {
		errs = append(errs, fmt.Errorf("sluice: Drain: %w", err))
	}
	return errors.Join(errs...)
}

// checkInForce checks that the kernel's Global rate scope now runs spec:
// its kind, and its capacity (a bucket's token limit, a window's permit
// limit), so that a case cannot measure a configuration that was silently
// not applied.
func checkInForce(k *kernel.Kernel, spec spi.Spec) error {
	want, ok := spec.Params[tokenbucket.ParamTokenLimit]
	if !ok {
		want = spec.Params[window.ParamPermitLimit]
	}
	var seen []string
	for _, sc := range k.Stats().Scopes {
		if sc.Kind == spec.Kind && sc.Limit == want {
			return nil
		}
		seen = append(seen, fmt.Sprintf("%s %s limit %d", sc.Name, sc.Kind, sc.Limit))
	}
	return fmt.Errorf("sluice: no scope runs %s with limit %d after publication (scopes: %v)", spec.Kind, want, seen)
}
