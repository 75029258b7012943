package codecs_test

import (
	"testing"

	"github.com/sluicerpc/sluice/codecs"
	"github.com/sluicerpc/sluice/conformance"
	"github.com/sluicerpc/sluice/spi"
)

// Every built-in codec passes the codec conformance suite in process (the
// suite a third party's codec runs too), s2 included: its chunked stream
// checks the context between chunks of one DecodeQuantum. Not parallel:
// BombRefused measures the whole process's allocations.
func TestBuiltinCodecsPassTheConformanceSuite(t *testing.T) {
	for _, name := range []string{"zstd", "s2", "gzip", "br", "identity"} {
		t.Run(name, func(t *testing.T) {
			conformance.RunCodecTests(t, func(*testing.T) (conformance.CodecHarness, error) {
				return builtinHarness(t, name), nil
			})
		})
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
