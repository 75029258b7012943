package window_test

import (
	"flag"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// The state machines (property_test.go) are the main check of the
	// rules; run more and longer sequences than rapid's defaults (100
	// checks of about 30 steps) unless the command line says otherwise.
	flag.Parse()
	set := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
	for name, value := range map[string]string{"rapid.checks": "3000", "rapid.steps": "60"} {
		if !set[name] && flag.Lookup(name) != nil {
			_ = flag.Set(name, value)
		}
	}
	goleak.VerifyTestMain(m)
}
