package codecs_test

import (
	"testing"

	"github.com/sluicerpc/sluice/codecs"
	"github.com/sluicerpc/sluice/conformance"
	"github.com/sluicerpc/sluice/spi"
)

// Every built-in codec but s2 passes the codec conformance suite in
// process (the suite a third party's codec runs too). Not parallel:
// BombRefused measures the whole process's allocations.
func TestBuiltinCodecsPassTheConformanceSuite(t *testing.T) {
	for _, name := range []string{"zstd", "gzip", "br", "identity"} {
		t.Run(name, func(t *testing.T) {
			conformance.RunCodecTests(t, func(*testing.T) (conformance.CodecHarness, error) {
				return builtinHarness(t, name), nil
			})
		})
	}
}

// s2's block format decodes a body in one library call, so it checks its
// context only before and after: it fails the suite's Cancellation check
// (a check per DecodeQuantum of output), and passes every other one. Until
// a chunked body format fixes that, s2 is not offered (Builtin); this test
// says so and flips when it is fixed.
func TestS2FailsOnlyTheCancellationCheck(t *testing.T) {
	report := conformance.CheckCodec("s2", func() (conformance.CodecHarness, error) { return builtinHarness(t, "s2"), nil })
	for _, c := range report.Checks {
		want := conformance.Passed
		if c.Name == "Cancellation" {
			want = conformance.Failed
		}
		if c.Outcome != want {
			t.Errorf("s2 %s: %v, want %v: %v", c.Name, c.Outcome, want, c.Log)
		}
	}
}

func builtinHarness(t *testing.T, name string) conformance.CodecHarness {
	c, ok := codecs.ByName(name)
	if !ok {
		t.Fatalf("no built-in codec %q", name)
	}
	return conformance.CodecHarnessOf(func() (spi.Codec, error) { return c, nil }, func(decoded int64) ([]byte, error) {
		return codecs.Bomb(name, decoded)
	})
}
