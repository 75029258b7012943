package plugin_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/conformance"
	"github.com/sluicerpc/sluice/plugin"
	"github.com/sluicerpc/sluice/plugin/internal/testcodec"
	"github.com/sluicerpc/sluice/spi"
)

// codecHarness is the harness of a codec served by p: the codec and its
// bombs, both answered by the plugin.
func codecHarness(t *testing.T, p *plugin.Plugin, name string, closers ...func()) conformance.CodecHarness {
	c := codec(t, p, name)
	return conformance.CodecHarnessOf(func() (spi.Codec, error) { return c, nil }, c.Bomb, closers...)
}

// TestCodecConformanceSubprocess runs the codec suite against the
// reference codec served by the test plugin binary, every check with its
// own plugin process. Cancellation holds through the bridge because the
// host checks its context between the pieces of decoded output: one
// cancellation crossing to the plugin would not be observed within a
// quantum of the host's output.
func TestCodecConformanceSubprocess(t *testing.T) {
	t.Setenv(modeEnv, "codecs")
	conformance.RunCodecTests(t, func(t *testing.T) (conformance.CodecHarness, error) {
		p, err := plugin.Open(pluginPath, plugin.WithLogger(quietLogger()))
		if err != nil {
			return nil, err
		}
		return codecHarness(t, p, testcodec.DeflateName, func() { _ = p.Close() }), nil
	})
}

// TestBrokenPluginCodecFailsItsCheck: a codec in the plugin that accepts
// trailing bytes fails the suite's CorruptInput check, and only it: the
// bridge neither hides the bug nor adds one.
func TestBrokenPluginCodecFailsItsCheck(t *testing.T) {
	p := openCodecs(t)
	report := conformance.CheckCodec(testcodec.TrailingName, func() (conformance.CodecHarness, error) {
		return codecHarness(t, p, testcodec.TrailingName), nil
	})
	require.Len(t, report.Checks, 7)
	for _, c := range report.Checks {
		want := conformance.Passed
		if c.Name == "CorruptInput" {
			want = conformance.Failed
		}
		if c.Outcome != want {
			t.Errorf("%s %s: %v, want %v: %v", testcodec.TrailingName, c.Name, c.Outcome, want, c.Log)
		}
	}
}
