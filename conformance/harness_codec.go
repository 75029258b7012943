package conformance

import (
	"errors"
	"testing"

	"github.com/sluicerpc/sluice/spi"
)

// CodecHarness describes one codec to the suite. RunCodecTests creates a
// fresh harness for every check and closes it when the check ends.
type CodecHarness interface {
	// NewCodec returns the codec under test (a fresh one, or a shared
	// one: codecs are safe for concurrent use).
	NewCodec() (spi.Codec, error)
	// Bomb returns one complete compressed body in the codec's format
	// that decodes to exactly decoded bytes (zeros), built without
	// holding the decoded bytes in memory (a streaming encoder over a
	// zero reader). A codec whose format cannot express a bomb (identity)
	// returns an error wrapping errors.ErrUnsupported: the checks that
	// need one skip that part.
	Bomb(decoded int64) ([]byte, error)
	// Close releases whatever the harness holds.
	Close()
}

// NewCodecHarness creates a harness for one check.
type NewCodecHarness func(t *testing.T) (CodecHarness, error)

// CodecHarnessOf returns the harness most codecs need: newCodec and bomb,
// nothing to set up per check. Close runs closers in order; they release
// what the caller set up for the harness (a plugin process, say).
func CodecHarnessOf(newCodec func() (spi.Codec, error), bomb func(decoded int64) ([]byte, error), closers ...func()) CodecHarness {
	return codecHarnessOf{newCodec: newCodec, bomb: bomb, closers: closers}
}

type codecHarnessOf struct {
	newCodec func() (spi.Codec, error)
	bomb     func(int64) ([]byte, error)
	closers  []func()
}

func (h codecHarnessOf) NewCodec() (spi.Codec, error) { return h.newCodec() }
func (h codecHarnessOf) Bomb(n int64) ([]byte, error) { return h.bomb(n) }

func (h codecHarnessOf) Close() {
	for _, c := range h.closers {
		c()
	}
}

// codecChecks lists the codec checks in the order they run.
var codecChecks = []check[CodecHarness]{
	{"Name", checkCodecName},
	{"RoundTrips", checkRoundTrips},
	{"LimitIsExact", checkLimitIsExact},
	{"BombRefused", checkBombRefused},
	{"CorruptInput", checkCorruptInput},
	{"Cancellation", checkCancellation},
	{"ConcurrentUse", checkCodecConcurrentUse},
}

// RunCodecTests runs the codec conformance checks against the codec that
// newHarness describes, one subtest per check, each with a fresh harness.
// Run it with -race (ConcurrentUse races goroutines on purpose) and not in
// parallel with other tests: BombRefused measures the allocations of the
// whole process.
func RunCodecTests(t *testing.T, newHarness NewCodecHarness) {
	t.Helper()
	runTests(t, codecChecks, newHarness, validateCodecHarness)
}

// CheckCodec runs the same checks as RunCodecTests outside of go test and
// returns one result per check, like CheckLimiter: each check on its own
// goroutine with a fresh harness, a panic failing that check alone.
func CheckCodec(name string, newHarness func() (CodecHarness, error)) Report {
	return checkAll(name, codecChecks, newHarness, validateCodecHarness)
}

// validateCodecHarness rejects a harness that the checks cannot use.
func validateCodecHarness(h CodecHarness) error {
	if h == nil {
		return errors.New("the harness is nil")
	}
	return nil
}
