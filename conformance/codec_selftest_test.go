package conformance

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/spi"
)

// codecCheckNames lists the codec checks in order.
func codecCheckNames() []string {
	names := make([]string, len(codecChecks))
	for i, c := range codecChecks {
		names[i] = c.name
	}
	return names
}

// TestFlateBomb: the fake's bomb decodes to exactly the size asked for,
// around the sizes where it switches from compressing to splicing.
func TestFlateBomb(t *testing.T) {
	c := newFlateCodec(flateFaults{})
	for _, n := range []int64{0, 1, 512<<10 - 1, 512 << 10, 512<<10 + 1, 3<<20 + 12345} {
		body, err := flateBomb(n)
		require.NoError(t, err)
		out, err := c.Decompress(context.Background(), nil, body, int(n))
		require.NoError(t, err, "n=%d", n)
		require.Len(t, out, int(n))
		assert.Equal(t, -1, bytes.IndexFunc(out, func(r rune) bool { return r != 0 }), "n=%d: not all zeros", n)
	}
}

// TestCorrectCodecPasses runs the suite, as a third party would, on the
// correct codec the broken ones are derived from.
func TestCorrectCodecPasses(t *testing.T) {
	RunCodecTests(t, func(*testing.T) (CodecHarness, error) { return flateHarness(flateFaults{}), nil })
}

// TestIdentityCodecPasses: the identity profile, which has no frame and no
// bomb, passes what applies to it and skips the rest: CorruptInput (any
// bytes are a body) and BombRefused (no body inflates); its Cancellation
// decodes 32 MiB that Compress made.
func TestIdentityCodecPasses(t *testing.T) {
	RunCodecTests(t, func(*testing.T) (CodecHarness, error) { return identityHarness(), nil })
	r := CheckCodec("identity", func() (CodecHarness, error) { return identityHarness(), nil })
	outcomes := map[string]Outcome{}
	for _, c := range r.Checks {
		outcomes[c.Name] = c.Outcome
	}
	assert.Equal(t, Skipped, outcomes["CorruptInput"])
	assert.Equal(t, Skipped, outcomes["BombRefused"])
	assert.Equal(t, Passed, outcomes["Cancellation"])
	assert.True(t, r.Passed())
}

// TestCheckCodecReportsEveryCheck: a correct codec gets one result per
// check, in order, none failed.
func TestCheckCodecReportsEveryCheck(t *testing.T) {
	r := CheckCodec("deflate", func() (CodecHarness, error) { return flateHarness(flateFaults{}), nil })
	require.Len(t, r.Checks, len(codecChecks))
	for i, c := range r.Checks {
		assert.Equal(t, codecChecks[i].name, c.Name)
		assert.Equal(t, Passed, c.Outcome, "%s: %v", c.Name, c.Log)
	}
	assert.True(t, r.Passed())
}

// TestCheckCodecHarnessErrors: a harness that cannot be created, or whose
// codec cannot, fails every check with the reason.
func TestCheckCodecHarnessErrors(t *testing.T) {
	r := CheckCodec("broken", func() (CodecHarness, error) { return nil, errors.New("no plugin") })
	assert.Equal(t, codecCheckNames(), r.Failed())
	for _, c := range r.Checks {
		assert.Contains(t, strings.Join(c.Log, "\n"), "creating the harness: no plugin")
	}
	nilCodec := CodecHarnessOf(func() (spi.Codec, error) { return nil, nil }, flateBomb)
	r = CheckCodec("nil", func() (CodecHarness, error) { return nilCodec, nil })
	assert.Equal(t, codecCheckNames(), r.Failed())
	assert.Contains(t, strings.Join(r.Checks[0].Log, "\n"), "nil codec")
}

// TestCheckCodecSurvivesPanics: a codec that panics everywhere fails every
// check, each with the panic, and the run goes on; CodecHarnessOf runs its
// closers once per check.
func TestCheckCodecSurvivesPanics(t *testing.T) {
	closed := 0
	h := CodecHarnessOf(func() (spi.Codec, error) { return panicCodec{}, nil }, flateBomb, func() { closed++ })
	r := CheckCodec("panicky", func() (CodecHarness, error) { return h, nil })
	require.Len(t, r.Checks, len(codecChecks))
	assert.Equal(t, codecCheckNames(), r.Failed())
	for _, c := range r.Checks {
		assert.Contains(t, strings.Join(c.Log, "\n"), "codec is broken", c.Name)
	}
	assert.Equal(t, len(codecChecks), closed)
}

// panicCodec panics in every method.
type panicCodec struct{}

func (panicCodec) Name() string { panic("codec is broken") }
func (panicCodec) Compress([]byte, []byte) ([]byte, bool, error) {
	panic("codec is broken")
}
func (panicCodec) Decompress(context.Context, []byte, []byte, int) ([]byte, error) {
	panic("codec is broken")
}

// checkCodecOnly runs the check named name against h, as CheckCodec does.
// Running every check against every broken codec would take a minute under
// -race; the other checks are run against the correct codec.
func checkCodecOnly(name string, h CodecHarness) Report {
	var checks []check[CodecHarness]
	for _, c := range codecChecks {
		if c.name == name {
			checks = append(checks, c)
		}
	}
	return checkAll("selftest", checks, func() (CodecHarness, error) { return h, nil }, validateCodecHarness)
}

// TestBrokenCodecsFail proves that the suite catches each deliberately
// broken codec: the check meant to catch it fails.
func TestBrokenCodecsFail(t *testing.T) {
	tests := []struct {
		name   string
		faults flateFaults
		want   string // the check that must fail
	}{
		{"no output cap: decodes everything, then checks the limit", flateFaults{noCap: true}, "BombRefused"},
		{"reserves 16 times the limit up front", flateFaults{prealloc: true}, "BombRefused"},
		{"reserves 16 times the limit, never checks its context", flateFaults{prealloc: true, ignoresCancel: true}, "BombRefused"},
		{"one byte above the limit allowed", flateFaults{offByOne: true}, "LimitIsExact"},
		{"panics on corrupt input", flateFaults{panicOnCorrupt: true}, "CorruptInput"},
		{"ignores cancellation", flateFaults{ignoresCancel: true}, "Cancellation"},
		{"checks its context every fourth quantum", flateFaults{sparseChecks: true}, "Cancellation"},
		{"decodes into its own buffer, seeing a cancellation only at the end", flateFaults{finishesFirst: true}, "Cancellation"},
		{"accepts trailing bytes", flateFaults{acceptTrailing: true}, "CorruptInput"},
		{"Compress grows dst past its capacity", flateFaults{growsDst: true}, "RoundTrips"},
		{"Decompress decodes over the caller's bytes in dst", flateFaults{clobbersDst: true}, "RoundTrips"},
		{"an invalid profile name", flateFaults{badName: true}, "Name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := checkCodecOnly(tt.want, flateHarness(tt.faults))
			require.Len(t, r.Checks, 1)
			assert.Equal(t, Failed, r.Checks[0].Outcome, "the suite passed a broken codec: %v", r.Checks[0].Log)
			for _, c := range r.Checks {
				if c.Outcome == Failed {
					t.Logf("%s failed:\n  %s", c.Name, strings.Join(c.Log[:min(len(c.Log), 3)], "\n  "))
				}
			}
		})
	}
}
