package conformance

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluicerpc/sluice/spi"
)

// The endpoint policy checks. Every check builds its policies on a fake
// clock that starts at start and moves only when the check advances it, and
// draws its scripts from a fixed seed: a run is deterministic apart from the
// interleavings of ConcurrentUse.

// Codes of gRPC's numbering, as spi.AttemptOutcome.Code carries them.
const (
	codeOK                = 0
	codeCanceled          = 1
	codeInvalidArgument   = 3
	codeDeadlineExceeded  = 4
	codeResourceExhausted = 8
	codeInternal          = 13
	codeUnavailable       = 14
)

var (
	successOutcome = spi.AttemptOutcome{Kind: spi.OutcomeSuccess, Code: codeOK, ResponseObserved: true, Elapsed: 2 * time.Millisecond}

	// failureOutcomes are the outcomes a breaker counts against an
	// endpoint: the checks report them to provoke refusals.
	failureOutcomes = []spi.AttemptOutcome{
		{Kind: spi.OutcomeSendFailure, Code: codeUnavailable},
		{Kind: spi.OutcomeConnectionClosed, Code: codeUnavailable, Elapsed: 40 * time.Millisecond},
		{Kind: spi.OutcomeDeadlineExceeded, Code: codeDeadlineExceeded, Elapsed: time.Second},
		{Kind: spi.OutcomeRemoteError, Code: codeUnavailable, ResponseObserved: true, Elapsed: 3 * time.Millisecond},
	}

	// plausibleOutcomes covers every spi.OutcomeKind with the codes a
	// client would report with it.
	plausibleOutcomes = []spi.AttemptOutcome{
		successOutcome,
		{Kind: spi.OutcomeSuccess, Code: codeOK}, // a one-way call: written, no response
		{Kind: spi.OutcomeRemoteError, Code: codeInvalidArgument, ResponseObserved: true, Elapsed: time.Millisecond},
		{Kind: spi.OutcomeRemoteError, Code: codeResourceExhausted, ResponseObserved: true, Elapsed: time.Millisecond},
		{Kind: spi.OutcomeRemoteError, Code: codeInternal, ResponseObserved: true, Elapsed: time.Millisecond},
		{Kind: spi.OutcomeRemoteError, Code: codeUnavailable, ResponseObserved: true, Elapsed: time.Millisecond},
		{Kind: spi.OutcomeSendFailure, Code: codeUnavailable},
		{Kind: spi.OutcomeConnectionClosed, Code: codeUnavailable, Elapsed: 40 * time.Millisecond},
		{Kind: spi.OutcomeGoAway, Code: codeUnavailable, Elapsed: time.Millisecond},
		{Kind: spi.OutcomeCancelled, Code: codeCanceled, Elapsed: 5 * time.Millisecond},
		{Kind: spi.OutcomeCancelled, Code: codeCanceled, ResponseObserved: true, Elapsed: 5 * time.Millisecond},
		{Kind: spi.OutcomeDeadlineExceeded, Code: codeDeadlineExceeded, Elapsed: time.Second},
		{Kind: spi.OutcomeDeadlineExceeded, Code: codeDeadlineExceeded, ResponseObserved: true, Elapsed: time.Second},
	}
)

// mixedOutcome draws an outcome: successes and failures in about equal
// parts, with the other kinds now and then.
func mixedOutcome(rng *rand.Rand) spi.AttemptOutcome {
	switch n := rng.IntN(10); {
	case n < 4:
		return successOutcome
	case n < 8:
		return failureOutcomes[rng.IntN(len(failureOutcomes))]
	default:
		return plausibleOutcomes[rng.IntN(len(plausibleOutcomes))]
	}
}

// seeded returns the check's random source: a fixed seed, so that a
// failure reproduces.
func seeded(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x5eed)) }

// newPolicy builds a policy of the harness on clock, failing the check on
// an error.
func newPolicy(t tb, h EndpointPolicyHarness, clock *fakeClock) spi.EndpointPolicy {
	t.Helper()
	p, err := h.NewPolicy(clock)
	if err != nil {
		t.Fatalf("NewPolicy: %v", err)
	}
	if p == nil {
		t.Fatalf("NewPolicy returned a nil policy")
	}
	return p
}

// report calls p.Report and fails the check if it panics: the contract
// says Report must not. It reports whether Report returned normally.
func report(t tb, p spi.EndpointPolicy, o spi.AttemptOutcome, token uint64, why string) bool {
	t.Helper()
	if r := reportRecovered(p, o, token); r != nil {
		t.Errorf("Report(%v/%d, token %d) (%s) panicked: %v", o.Kind, o.Code, token, why, r)
		return false
	}
	return true
}

// reportRecovered calls p.Report and returns what it panicked with.
func reportRecovered(p spi.EndpointPolicy, o spi.AttemptOutcome, token uint64) (r any) {
	defer func() { r = recover() }()
	p.Report(o, token)
	return nil
}

// attempt is an allowed attempt the check still owes a Report.
type attempt struct {
	endpoint string
	token    uint64
}

// allowsAgain proves the endpoint is live: it asks until the policy allows
// three attempts in a row (each reported as a success before the next),
// advancing the clock after every refusal by its RetryAfter or, when the
// policy does not say, by a step that doubles from 100ms up to an hour. A
// breaker opened by earlier failures must let probes through once its
// break is over, and close again on their success. It fails the check and
// returns false if the endpoint stays refused for 64 refusals (days of the
// fake clock).
func allowsAgain(t tb, p spi.EndpointPolicy, clock *fakeClock, endpoint, method, after string) bool {
	t.Helper()
	step := 100 * time.Millisecond
	inARow, refusals := 0, 0
	var last spi.EndpointDecision
	for inARow < 3 {
		d := p.TryAcquire(endpoint, method)
		if d.Allowed {
			inARow++
			if !report(t, p, successOutcome, d.Token, "a probe of liveness") {
				return false
			}
			continue
		}
		last = d
		inARow = 0
		if refusals++; refusals > 64 {
			t.Errorf("after %s, endpoint %s never allowed three attempts in a row again: 64 refusals over %v of the fake clock (last RetryAfter %v)",
				after, endpoint, clock.Now().Sub(start), last.RetryAfter)
			return false
		}
		if d.RetryAfter > 0 {
			clock.Advance(d.RetryAfter + time.Nanosecond)
			continue
		}
		clock.Advance(step)
		step = min(2*step, time.Hour)
	}
	return true
}

// fill asks for attempts on endpoint until one is refused or max+1 were
// allowed, and returns the tokens of the allowed ones.
func fill(p spi.EndpointPolicy, endpoint, method string, max int) []uint64 {
	var tokens []uint64
	for len(tokens) <= max {
		d := p.TryAcquire(endpoint, method)
		if !d.Allowed {
			break
		}
		tokens = append(tokens, d.Token)
	}
	return tokens
}

// fillExactly settles endpoint, fills it and checks that exactly bound
// attempts were allowed. It returns the tokens, which the caller owes
// Reports.
func fillExactly(t tb, p spi.EndpointPolicy, clock *fakeClock, endpoint, method string, bound int, when string) ([]uint64, bool) {
	t.Helper()
	if !allowsAgain(t, p, clock, endpoint, method, when) {
		return nil, false
	}
	tokens := fill(p, endpoint, method, bound)
	switch {
	case len(tokens) > bound:
		t.Errorf("%s, endpoint %s allowed more than %d unreported attempts; the policy declares Bounded %d", when, endpoint, bound, bound)
	case len(tokens) < bound:
		t.Errorf("%s, endpoint %s allowed only %d unreported attempts; the policy declares Bounded %d", when, endpoint, len(tokens), bound)
	default:
		return tokens, true
	}
	return tokens, false
}

// reportAll reports every token as a success.
func reportAll(t tb, p spi.EndpointPolicy, tokens []uint64) {
	t.Helper()
	for _, tok := range tokens {
		report(t, p, successOutcome, tok, "returning what the check holds")
	}
}

var (
	policyEndpoints = []string{"10.0.0.1:7000", "10.0.0.2:7000", "[fd00::3]:7000"}
	policyMethods   = []string{"/sluice.test.Echo/Get", "/sluice.test.Echo/Put"}
)

// checkReportsPairWithTokens proves that a policy stays live when the
// client keeps its side of the contract: a long run of attempts over three
// endpoints whose tokens are reported exactly once, in shuffled order and
// with mixed outcomes, leaves every endpoint able to allow again once
// everything is reported and the clock has moved past any break. With
// Bounded it proves the accounting is per token: a settled endpoint allows
// exactly Bounded unreported attempts, and each Report frees exactly one
// slot. Why: a policy that misplaces a token (reports matched to the wrong
// endpoint, a slot never freed) closes an endpoint forever, the quietest
// outage a client can have.
func checkReportsPairWithTokens(t tb, h EndpointPolicyHarness) {
	clock := newFakeClock()
	p := newPolicy(t, h, clock)
	rng := seeded(1)
	var out []attempt
	reportSome := func(all bool) {
		rng.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
		n := len(out)
		if !all {
			n = rng.IntN(len(out) + 1)
		}
		for _, a := range out[:n] {
			report(t, p, mixedOutcome(rng), a.token, "an allowed attempt, once")
		}
		out = out[n:]
	}
	for step := range 600 {
		ep := policyEndpoints[rng.IntN(len(policyEndpoints))]
		if d := p.TryAcquire(ep, policyMethods[rng.IntN(len(policyMethods))]); d.Allowed {
			out = append(out, attempt{ep, d.Token})
		}
		if step%16 == 15 {
			reportSome(false)
			clock.Advance(time.Duration(rng.IntN(50)) * time.Millisecond)
		}
	}
	reportSome(true)
	for _, ep := range policyEndpoints {
		if !allowsAgain(t, p, clock, ep, policyMethods[0], "every allowed attempt was reported once") {
			return
		}
	}
	bound := h.Capabilities().Bounded
	if bound == 0 {
		return
	}
	const ep, m = "10.0.1.1:7000", "/sluice.test.Echo/Get"
	tokens, ok := fillExactly(t, p, clock, ep, m, bound, "on a settled endpoint")
	if !ok {
		reportAll(t, p, tokens)
		return
	}
	rng.Shuffle(len(tokens), func(i, j int) { tokens[i], tokens[j] = tokens[j], tokens[i] })
	for i := range tokens {
		report(t, p, successOutcome, tokens[i], "one of a full endpoint's attempts")
		more := fill(p, ep, m, 1)
		if len(more) != 1 {
			t.Errorf("with %d attempts outstanding, one Report freed %d slots; want exactly 1", bound, len(more))
			reportAll(t, p, tokens[i+1:])
			reportAll(t, p, more)
			return
		}
		tokens[i] = more[0]
	}
	reportAll(t, p, tokens)
}

// checkUnknownAndRepeatedTokens proves that Reports the policy did not ask
// for leave it intact. A Report with token 0, with a token it never issued,
// or repeating a token already reported must not panic (part 1). For a
// Deterministic policy, a twin fed such junk Reports, with failure and
// success outcomes, over a long scripted sequence of attempts, Reports and
// clock moves decides at every step exactly as a twin that was not (part
// 2); the same script without junk first checks that the policy is
// deterministic at all. With Bounded, a repeated Report or a junk one never
// frees a slot (part 3). Why: the client returns tokens unchanged, but a
// retired policy, a bug or a zero-valued decision can still bring back a
// token the policy does not hold; a policy that counts it as a failure
// opens a breaker on a healthy endpoint, one that credits it overshoots its
// bound.
func checkUnknownAndRepeatedTokens(t tb, h EndpointPolicyHarness) {
	caps := h.Capabilities()
	// Part 1: no panic.
	clock := newFakeClock()
	p := newPolicy(t, h, clock)
	rng := seeded(2)
	junk := []uint64{0, 1<<63 | rng.Uint64(), ^uint64(0)}
	for _, o := range plausibleOutcomes {
		for _, tok := range junk {
			report(t, p, o, tok, "a token never issued")
		}
	}
	for i, ep := range policyEndpoints {
		d := p.TryAcquire(ep, policyMethods[i%2])
		if !d.Allowed {
			continue
		}
		report(t, p, successOutcome, d.Token, "an allowed attempt, once")
		report(t, p, successOutcome, d.Token, "the same token again")
		report(t, p, failureOutcomes[i%len(failureOutcomes)], d.Token, "the same token a third time")
	}
	for _, ep := range policyEndpoints {
		if !allowsAgain(t, p, clock, ep, policyMethods[0], "Reports of unknown and repeated tokens") {
			return
		}
	}
	if t.Failed() {
		return
	}
	// Part 2: differential.
	if caps.Deterministic {
		if !differential(t, h, false) {
			t.Errorf("the policy declares Deterministic, but two fresh policies given the same calls at the same instants decided differently (see above); the junk-token comparison needs a deterministic policy")
			return
		}
		differential(t, h, true)
	}
	// Part 3: bounded.
	if caps.Bounded > 0 {
		boundedJunk(t, h, caps.Bounded)
	}
}

// differential runs one script on twins that share a clock, feeding the
// second junk Reports if junk is set, and fails the check at the first
// decision on which they differ. It reports whether they agreed
// throughout.
func differential(t tb, h EndpointPolicyHarness, junk bool) bool {
	t.Helper()
	clock := newFakeClock()
	clean, dirty := newPolicy(t, h, clock), newPolicy(t, h, clock)
	rng := seeded(3)
	type pair struct{ clean, dirty uint64 }
	var out []pair
	issued := map[uint64]bool{} // the dirty twin's tokens
	var injected []string
	inject := func(o spi.AttemptOutcome, tok uint64, what string) {
		injected = append(injected, fmt.Sprintf("%s (token %d, %v)", what, tok, o.Kind))
		report(t, dirty, o, tok, what)
	}
	defer func() {
		for _, a := range out {
			report(t, clean, successOutcome, a.clean, "returning what the check holds")
			report(t, dirty, successOutcome, a.dirty, "returning what the check holds")
		}
	}()
	const steps = 1500
	for step := range steps {
		switch op := rng.IntN(10); {
		case op < 5: // an attempt
			ep := policyEndpoints[rng.IntN(len(policyEndpoints))]
			m := policyMethods[rng.IntN(len(policyMethods))]
			a, b := clean.TryAcquire(ep, m), dirty.TryAcquire(ep, m)
			if a.Allowed != b.Allowed || a.RetryAfter != b.RetryAfter {
				what := "two fresh policies"
				if junk {
					what = fmt.Sprintf("a policy fed %d junk Reports (last: %v) and its twin", len(injected), injected[max(0, len(injected)-3):])
				}
				t.Errorf("at step %d (start+%v), TryAcquire(%s, %s): %s decided differently: allowed %v / %v, RetryAfter %v / %v",
					step, clock.Now().Sub(start), ep, m, what, b.Allowed, a.Allowed, b.RetryAfter, a.RetryAfter)
				if a.Allowed {
					report(t, clean, successOutcome, a.Token, "returning what the check holds")
				}
				if b.Allowed {
					report(t, dirty, successOutcome, b.Token, "returning what the check holds")
				}
				return false
			}
			if a.Allowed {
				out = append(out, pair{a.Token, b.Token})
				issued[b.Token] = true
			}
		case op < 9: // a Report
			if len(out) == 0 {
				continue
			}
			i := rng.IntN(len(out))
			a := out[i]
			out = append(out[:i], out[i+1:]...)
			o := mixedOutcome(rng)
			report(t, clean, o, a.clean, "an allowed attempt, once")
			report(t, dirty, o, a.dirty, "an allowed attempt, once")
			if !junk {
				continue
			}
			bad := failureOutcomes[rng.IntN(len(failureOutcomes))]
			if rng.IntN(4) == 0 {
				bad = successOutcome
			}
			switch rng.IntN(3) {
			case 0:
				inject(bad, a.dirty, "a repeated token")
			case 1:
				if !issued[0] {
					inject(bad, 0, "token 0")
				}
			default:
				tok := 1<<63 | rng.Uint64()
				if !issued[tok] {
					inject(bad, tok, "a token never issued")
				}
			}
		default: // time passes
			if rng.IntN(8) == 0 {
				clock.Advance(time.Duration(5+rng.IntN(60)) * time.Second)
			} else {
				clock.Advance(time.Duration(rng.IntN(2000)) * time.Millisecond)
			}
		}
	}
	return true
}

// boundedJunk is part 3 of checkUnknownAndRepeatedTokens: on a full
// endpoint, a repeated Report and junk Reports free no slot.
func boundedJunk(t tb, h EndpointPolicyHarness, bound int) {
	t.Helper()
	clock := newFakeClock()
	p := newPolicy(t, h, clock)
	const ep, m = "10.0.1.2:7000", "/sluice.test.Echo/Get"
	tokens, ok := fillExactly(t, p, clock, ep, m, bound, "on a fresh endpoint")
	defer func() { reportAll(t, p, tokens) }()
	if !ok {
		return
	}
	issued := map[uint64]bool{}
	for _, tok := range tokens {
		issued[tok] = true
	}
	for _, tok := range []uint64{0, 1<<63 | 12345, ^uint64(0) - 1} {
		if !issued[tok] {
			report(t, p, successOutcome, tok, "a token never issued")
		}
	}
	if more := fill(p, ep, m, 1); len(more) > 0 {
		t.Errorf("with %d attempts outstanding (the bound), Reports of token 0 and of tokens never issued freed %d slots", bound, len(more))
		tokens = append(tokens, more...)
		return
	}
	first := tokens[0]
	tokens = tokens[1:]
	report(t, p, successOutcome, first, "one of a full endpoint's attempts")
	report(t, p, successOutcome, first, "the same token again")
	report(t, p, failureOutcomes[0], first, "the same token a third time")
	more := fill(p, ep, m, 2)
	tokens = append(tokens, more...)
	if len(more) != 1 {
		t.Errorf("with %d attempts outstanding (the bound), one Report repeated three times freed %d slots; want exactly 1 (a repeated Report must not credit twice)", bound, len(more))
	}
}

// checkRefusalsOweNoReport proves that refusals are free: a run that
// reports every allowed attempt as a failure (to provoke refusals: a
// breaker opens, a throttle sheds) sees every refusal carry a RetryAfter
// of zero or more, and once the allowed attempts are reported, the
// unreported refusals have left nothing behind: every endpoint allows
// again, and with Bounded a full endpoint refused fifty times is still
// exactly Bounded once its attempts are reported. Why: the client owes no
// Report for a refusal; a policy that takes capacity before it refuses
// leaks a slot on every refusal, and a negative RetryAfter makes a client
// spin.
func checkRefusalsOweNoReport(t tb, h EndpointPolicyHarness) {
	clock := newFakeClock()
	p := newPolicy(t, h, clock)
	rng := seeded(4)
	var out []attempt
	refusals, negative := 0, 0
	hold := max(2, h.Capabilities().Bounded) // a bound refuses the attempt past it
	for step := range 400 {
		ep := policyEndpoints[step%2]
		d := p.TryAcquire(ep, policyMethods[rng.IntN(len(policyMethods))])
		switch {
		case d.Allowed:
			out = append(out, attempt{ep, d.Token})
		case d.RetryAfter < 0:
			negative++
			if negative == 1 {
				t.Errorf("at start+%v, a refusal of %s has RetryAfter %v; want >= 0 (0: unknown)", clock.Now().Sub(start), ep, d.RetryAfter)
			}
			refusals++
		default:
			refusals++
		}
		if len(out) > hold || rng.IntN(3) == 0 {
			for _, a := range out {
				report(t, p, failureOutcomes[rng.IntN(len(failureOutcomes))], a.token, "an allowed attempt, once, as a failure")
			}
			out = out[:0]
		}
		if step%25 == 24 {
			clock.Advance(time.Duration(rng.IntN(3000)) * time.Millisecond)
		}
	}
	for _, a := range out {
		report(t, p, failureOutcomes[0], a.token, "an allowed attempt, once, as a failure")
	}
	if negative > 0 {
		t.Errorf("%d refusals of %d had a negative RetryAfter", negative, refusals)
	}
	if refusals == 0 {
		t.Logf("the policy refused no attempt in 400 reported as failures; nothing more to check without a bound")
	} else {
		t.Logf("%d of 400 attempts were refused and never reported", refusals)
	}
	for _, ep := range policyEndpoints[:2] {
		if !allowsAgain(t, p, clock, ep, policyMethods[0], fmt.Sprintf("%d unreported refusals", refusals)) {
			return
		}
	}
	bound := h.Capabilities().Bounded
	if bound == 0 {
		return
	}
	const ep, m = "10.0.1.3:7000", "/sluice.test.Echo/Get"
	tokens, ok := fillExactly(t, p, clock, ep, m, bound, "on a settled endpoint")
	if !ok {
		reportAll(t, p, tokens)
		return
	}
	for range 50 {
		if d := p.TryAcquire(ep, m); d.Allowed {
			t.Errorf("a full endpoint (Bounded %d) allowed another attempt", bound)
			tokens = append(tokens, d.Token)
		} else if d.RetryAfter < 0 {
			t.Errorf("a refusal at the bound has RetryAfter %v; want >= 0", d.RetryAfter)
		}
	}
	reportAll(t, p, tokens)
	tokens, _ = fillExactly(t, p, clock, ep, m, bound, "after 50 refusals at the bound, none reported, and every allowed attempt reported")
	reportAll(t, p, tokens)
}

// checkPolicyConcurrentUse proves that the policy is safe for concurrent
// use, as the client calls it: eight goroutines ask for attempts on three
// endpoints, hold each allowed one for a moment and report it exactly
// once, with mixed outcomes, while another goroutine moves the clock.
// Nothing panics, every refusal has RetryAfter >= 0, with Bounded the
// attempts held at once on an endpoint (counted by the goroutines, between
// TryAcquire and Report) never exceed the bound, and afterwards every
// endpoint allows again (exactly Bounded, with a bound). Why: a
// check-then-increment bound overshoots under contention, and lost updates
// leak slots; run it with -race to catch data races too.
func checkPolicyConcurrentUse(t tb, h EndpointPolicyHarness) {
	clock := newFakeClock()
	p := newPolicy(t, h, clock)
	bound := int64(h.Capabilities().Bounded)
	var held, worst [3]atomic.Int64
	var panicked, badRetry atomic.Value
	record := func(v *atomic.Value, s string) { v.CompareAndSwap(nil, s) }
	stop := make(chan struct{})
	var cwg sync.WaitGroup
	cwg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			clock.Advance(time.Millisecond)
			runtime.Gosched()
		}
	})
	var wg sync.WaitGroup
	const workers, rounds = 8, 600
	for w := range workers {
		wg.Go(func() {
			defer func() {
				if r := recover(); r != nil {
					record(&panicked, fmt.Sprint("TryAcquire: ", r))
				}
			}()
			rng := seeded(uint64(100 + w))
			for r := range rounds {
				i := (r / 8) % 3 // the workers meet on one endpoint at a time
				d := p.TryAcquire(policyEndpoints[i], policyMethods[0])
				if !d.Allowed {
					if d.RetryAfter < 0 {
						record(&badRetry, fmt.Sprintf("RetryAfter %v on %s", d.RetryAfter, policyEndpoints[i]))
					}
					runtime.Gosched()
					continue
				}
				n := held[i].Add(1) // counts at most what the policy allowed
				for m := worst[i].Load(); n > m && !worst[i].CompareAndSwap(m, n); m = worst[i].Load() {
				}
				runtime.Gosched()
				held[i].Add(-1)
				o := successOutcome
				if rng.IntN(8) == 0 {
					o = mixedOutcome(rng)
				}
				if r := reportRecovered(p, o, d.Token); r != nil {
					record(&panicked, fmt.Sprint("Report: ", r))
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	cwg.Wait()
	if s, _ := panicked.Load().(string); s != "" {
		t.Errorf("a goroutine calling the policy panicked: %s", s)
	}
	if s, _ := badRetry.Load().(string); s != "" {
		t.Errorf("a concurrent refusal had a negative RetryAfter: %s", s)
	}
	for i, ep := range policyEndpoints {
		w := worst[i].Load()
		if bound > 0 && w > bound {
			t.Errorf("%d attempts on %s were allowed and unreported at once; the policy declares Bounded %d", w, ep, bound)
		}
		t.Logf("%s: at most %d attempts held at once", ep, w)
	}
	for _, ep := range policyEndpoints {
		if !allowsAgain(t, p, clock, ep, policyMethods[0], "concurrent use") {
			return
		}
		if bound > 0 {
			tokens, _ := fillExactly(t, p, clock, ep, policyMethods[0], int(bound), "after concurrent use")
			reportAll(t, p, tokens)
		}
	}
}

// checkOutcomeKinds proves that Report accepts every spi.OutcomeKind, each
// with the codes a client reports with it (and ResponseObserved both ways
// where it can be), without panicking, and that the endpoint allows again
// afterwards. Why: a policy written against a few outcomes (success and
// "error") that panics or indexes out of range on GoAway or Cancelled
// breaks the first time a server drains.
func checkOutcomeKinds(t tb, h EndpointPolicyHarness) {
	covered := map[spi.OutcomeKind]bool{}
	for _, o := range plausibleOutcomes {
		covered[o.Kind] = true
	}
	for k := spi.OutcomeKind(1); k.Valid(); k++ {
		if !covered[k] {
			t.Fatalf("internal: the suite does not cover outcome %v", k)
		}
	}
	clock := newFakeClock()
	p := newPolicy(t, h, clock)
	const ep, m = "10.0.1.4:7000", "/sluice.test.Echo/Get"
	for _, o := range plausibleOutcomes {
		if !allowsAgain(t, p, clock, ep, m, "earlier outcomes") {
			return
		}
		d := p.TryAcquire(ep, m)
		for try := 0; !d.Allowed; try++ {
			// A policy may refuse after allowing (a throttle sheds at
			// random): settle again and ask again, a few times.
			if try == 8 {
				t.Errorf("endpoint %s allowed three attempts in a row, then refused the next, 8 times over", ep)
				return
			}
			if !allowsAgain(t, p, clock, ep, m, "earlier outcomes") {
				return
			}
			d = p.TryAcquire(ep, m)
		}
		report(t, p, o, d.Token, fmt.Sprintf("outcome %v with code %d", o.Kind, o.Code))
	}
	allowsAgain(t, p, clock, ep, m, "Reports of every outcome kind")
}
