package conformance

import (
	"flag"
	"fmt"
	"runtime"
	"sync"
	"testing"
)

// Outcome is how one check ended in a CheckLimiter or CheckEndpointPolicy
// run.
type Outcome int

const (
	// Passed: the check ran to its end and recorded no failure.
	Passed Outcome = iota + 1
	// Failed: the check recorded at least one failure.
	Failed
	// Skipped: the check does not apply to the kind (for example a rate
	// check against a concurrency kind).
	Skipped
)

func (o Outcome) String() string {
	switch o {
	case Passed:
		return "PASS"
	case Failed:
		return "FAIL"
	case Skipped:
		return "SKIP"
	}
	return fmt.Sprintf("Outcome(%d)", int(o))
}

// CheckResult is the result of one check.
type CheckResult struct {
	// Name is the check's name, as in the subtests of RunLimiterTests
	// (or RunEndpointPolicyTests).
	Name    string
	Outcome Outcome
	// Log is what the check logged, failures included, in order.
	Log []string
}

// Report is the result of CheckLimiter or CheckEndpointPolicy: one entry
// per check, in order.
type Report struct {
	Checks []CheckResult
}

// Passed reports whether no check failed.
func (r Report) Passed() bool {
	for _, c := range r.Checks {
		if c.Outcome == Failed {
			return false
		}
	}
	return true
}

// Failed returns the names of the checks that failed.
func (r Report) Failed() []string {
	var names []string
	for _, c := range r.Checks {
		if c.Outcome == Failed {
			names = append(names, c.Name)
		}
	}
	return names
}

// CheckLimiter runs the same checks as RunLimiterTests outside of go test,
// for programs such as "sluice conformance" that vet a limiter kind they
// loaded (a plugin binary, say). Each check runs on its own goroutine with
// a fresh harness from newHarness, closed when the check ends; a check that
// panics or stops early fails alone and the next one runs. CheckLimiter
// blocks until every check has ended.
//
// The property checks use rapid, which reads testing's flags: outside go
// test, CheckLimiter calls testing.Init (which registers them on
// flag.CommandLine) and, if the command line is not parsed yet, parses an
// empty one. rapid also writes a file under testdata/rapid when a property
// fails unless its -rapid.nofailfile flag is set; a program may set it
// with flag.Set before calling CheckLimiter.
func CheckLimiter(name string, newHarness func() (LimiterHarness, error)) Report {
	return checkAll(name, limiterChecks, newHarness, validateHarness)
}

// checkAll runs checks outside of go test, each on its own goroutine with
// a recorder and a fresh harness; see CheckLimiter.
func checkAll[H closer](name string, checks []check[H], newHarness func() (H, error), validate func(H) error) Report {
	testing.Init()
	if !flag.Parsed() {
		_ = flag.CommandLine.Parse(nil)
	}
	var r Report
	for _, c := range checks {
		rec := &recorder{name: name + "/" + c.name}
		done := make(chan struct{})
		go func() {
			defer close(done)
			defer failOnPanic(rec) // a panic of newHarness
			runCheck(rec, c, newHarness, validate)
		}()
		<-done
		r.Checks = append(r.Checks, rec.result(c.name))
	}
	return r
}

// recorder is the tb of CheckLimiter and CheckEndpointPolicy: it records failures instead of
// failing a test. A check runs on it in its own goroutine, so that FailNow
// and SkipNow can end the check with runtime.Goexit, as testing.T does.
// The concurrent checks log and fail from several goroutines, hence the
// mutex.
type recorder struct {
	name string

	mu      sync.Mutex
	failed  bool
	skipped bool
	logs    []string
}

var _ tb = (*recorder)(nil)

func (r *recorder) Helper()      {}
func (r *recorder) Name() string { return r.name }

func (r *recorder) Logf(format string, args ...any) { r.log(fmt.Sprintf(format, args...)) }
func (r *recorder) Log(args ...any)                 { r.log(fmt.Sprint(args...)) }

func (r *recorder) log(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logs = append(r.logs, s)
}

func (r *recorder) Fail() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failed = true
}

func (r *recorder) Failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failed
}

func (r *recorder) FailNow()                          { r.Fail(); runtime.Goexit() }
func (r *recorder) Errorf(format string, args ...any) { r.Logf(format, args...); r.Fail() }
func (r *recorder) Error(args ...any)                 { r.Log(args...); r.Fail() }
func (r *recorder) Fatalf(format string, args ...any) { r.Logf(format, args...); r.FailNow() }
func (r *recorder) Fatal(args ...any)                 { r.Log(args...); r.FailNow() }
func (r *recorder) Skipf(format string, args ...any)  { r.Logf(format, args...); r.SkipNow() }
func (r *recorder) Skip(args ...any)                  { r.Log(args...); r.SkipNow() }

func (r *recorder) SkipNow() {
	r.mu.Lock()
	r.skipped = true
	r.mu.Unlock()
	runtime.Goexit()
}

// result is the check's outcome once it has ended. A failure wins over a
// skip that follows it.
func (r *recorder) result(name string) CheckResult {
	r.mu.Lock()
	defer r.mu.Unlock()
	res := CheckResult{Name: name, Outcome: Passed, Log: r.logs}
	switch {
	case r.failed:
		res.Outcome = Failed
	case r.skipped:
		res.Outcome = Skipped
	}
	return res
}
