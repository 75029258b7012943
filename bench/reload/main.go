// Command reload is the reload experiment: for each system, greedy traffic
// drains a limit of 100 per second on simulated time, the limit is changed
// the way that system's users change it, and the program counts the
// admissions in the first second after the change above what the
// no-free-burst bound allows (docs/benchmarks.md, "Live reconfiguration").
//
// It prints one line per case, in a fixed order:
//
//	EXTRA <system>/<case> <count>  admitted=<n> bound=<m>
//
// where count = max(0, admitted - bound). Every system runs on one
// simulated clock stepped in 1 ms ticks (x/time/rate through its explicit
// time arguments, sluice through kernel.Config.Clock, sentinel-golang
// through util.SetClock), so the output is the same on every run and
// machine. The exit status is 1 if a sluice case admits more than its
// bound, or if a case fails to run.
//
// Run it with:
//
//	cd bench && go run ./reload
package main

import (
	"fmt"
	"io"
	"os"
)

func main() {
	outs, err := runAll(os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "reload:", err)
		os.Exit(1)
	}
	failed := false
	for _, o := range outs {
		if o.MustHold() && o.Extra() > 0 {
			fmt.Fprintf(os.Stderr, "reload: %s admitted %d in the first second after the change, %d above the bound of %d\n",
				o.Key(), o.Admitted, o.Extra(), o.Bound)
			failed = true
		}
	}
	if failed {
		os.Exit(1)
	}
}

// runAll runs every case in order, writing each line to w as it completes.
func runAll(w io.Writer) ([]Outcome, error) {
	outs := make([]Outcome, 0, len(cases))
	for _, c := range cases {
		o, err := Run(c)
		if err != nil {
			return outs, err
		}
		if _, err := fmt.Fprintln(w, o.Line()); err != nil {
			return outs, err
		}
		outs = append(outs, o)
	}
	return outs, nil
}
