package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sluicerpc/sluice/limiters/tokenbucket"
)

// TestMain checks that no case leaves a goroutine behind: none of the
// systems may run anything in the background, which would also read the
// simulated clock behind the driver's back.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// mustFreeBurst lists the peer cases that must show a free burst, so that
// the experiment demonstrably can fail: a replaced x/time/rate limiter
// starts full, and Inf -> finite refills the bucket.
var mustFreeBurst = map[string]bool{
	"x-time-rate/new-limiter":   true,
	"x-time-rate/inf-to-finite": true,
}

// TestReload runs the program's path (every case, in order, printing its
// line) and checks every sluice case prints EXTRA 0 and the two x/time/rate
// free bursts are seen.
func TestReload(t *testing.T) {
	var out bytes.Buffer
	outs, err := runAll(&out)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("output:\n%s", out.String())

	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(outs) != len(cases) || len(lines) != len(cases) {
		t.Fatalf("%d outcomes and %d lines for %d cases", len(outs), len(lines), len(cases))
	}
	seen := map[string]bool{}
	for i, o := range outs {
		key := cases[i].Key()
		if o.Key() != key {
			t.Fatalf("outcome %d is %s, want %s (case order)", i, o.Key(), key)
		}
		if seen[key] {
			t.Fatalf("case %s appears twice", key)
		}
		seen[key] = true
		t.Run(key, func(t *testing.T) {
			want := fmt.Sprintf("EXTRA %s %d  admitted=%d bound=%d", key, o.Extra(), o.Admitted, o.Bound)
			if lines[i] != want {
				t.Errorf("line %q, want %q", lines[i], want)
			}
			// Guards against a vacuous EXTRA 0: traffic ran under both
			// configurations and was limited in the measured second.
			if o.Before == 0 || o.Admitted == 0 {
				t.Errorf("admitted %d before P and %d after: the case measured nothing", o.Before, o.Admitted)
			}
			if o.Saturated {
				t.Errorf("a measured tick reached %d attempts: the count is a lower bound", MaxAttemptsPerTick)
			}
			switch {
			case o.MustHold() && o.Extra() != 0:
				t.Errorf("free burst: admitted %d in [P, P+1s), %d above the no-free-burst bound %d", o.Admitted, o.Extra(), o.Bound)
			case mustFreeBurst[key] && o.Extra() == 0:
				t.Errorf("admitted %d against a bound of %d: the known free burst was not seen", o.Admitted, o.Bound)
			}
		})
	}
	for key := range mustFreeBurst {
		if !seen[key] {
			t.Errorf("case %s is missing", key)
		}
	}
}

// TestSluiceHarnessSeesAFreeBurst drives sluice through the same harness
// (Capture/Admit/Release on the simulated clock) but changes the limit by
// building a new kernel at P, which starts with a full bucket: the
// harness must report that as a free burst, so sluice's EXTRA 0 cannot
// come from a harness that does not see one.
func TestSluiceHarnessSeesAFreeBurst(t *testing.T) {
	c := Case{
		System: "control", Name: "sluice-new-kernel", Bound: 200, // as sluice/tokenbucket-raise
		Build: sluiceNewKernel(tokenbucket.ContinuousSpec(100, 100, time.Second), tokenbucket.ContinuousSpec(200, 200, time.Second)),
	}
	o, err := Run(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(o.Line())
	// A fresh bucket of 200 at P, then one token per 5 ms: 200 + 199.
	if o.Admitted != 399 || o.Extra() != 199 {
		t.Errorf("admitted %d (EXTRA %d), want 399 (EXTRA 199)", o.Admitted, o.Extra())
	}
}

// TestDriveIsDeterministic runs one case of each system twice: simulated
// time makes every count exact and repeatable.
func TestDriveIsDeterministic(t *testing.T) {
	for _, key := range []string{"x-time-rate/setlimit-setburst", "sentinel-golang/loadrules", "sluice/fixedwindow-raise"} {
		var c Case
		for _, cc := range cases {
			if cc.Key() == key {
				c = cc
			}
		}
		if c.Build == nil {
			t.Fatalf("case %s is missing", key)
		}
		a, err := Run(c)
		if err != nil {
			t.Fatal(err)
		}
		b, err := Run(c)
		if err != nil {
			t.Fatal(err)
		}
		if a.Result != b.Result {
			t.Errorf("%s: %+v then %+v", key, a.Result, b.Result)
		}
	}
}
