package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// binaries holds the plugin binaries the tests build once.
var binaries struct {
	once sync.Once
	dir  string
	err  error
}

// pluginBinary builds (once per test binary) the plugin at import path pkg
// into a shared temporary directory and returns its path.
func pluginBinary(t *testing.T, name, pkg string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and starts plugin binaries")
	}
	binaries.once.Do(func() { binaries.dir, binaries.err = os.MkdirTemp("", "sluice-conformance-test-") })
	require.NoError(t, binaries.err)
	bin := filepath.Join(binaries.dir, name)
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	out, err := exec.Command("go", "build", "-o", bin, pkg).CombinedOutput()
	require.NoError(t, err, "go build %s:\n%s", pkg, out)
	return bin
}

func limitersPlugin(t *testing.T) string {
	return pluginBinary(t, "sluice-builtins-plugin", "github.com/sluicerpc/sluice/cmd/sluice-builtins-plugin")
}

func brokenPlugin(t *testing.T) string {
	return pluginBinary(t, "brokenplugin", "github.com/sluicerpc/sluice/cmd/sluice/internal/brokenplugin")
}

// runCommand runs the sluice command line in process.
func runCommand(args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

// TestConformanceBuiltinPlugin: every built-in kind, endpoint policy and
// codec passes through the bridge, one line each, exit 0.
func TestConformanceBuiltinPlugin(t *testing.T) {
	code, out, errOut := runCommand("conformance", "--plugin", limitersPlugin(t))
	assert.Equal(t, exitOK, code, "stderr:\n%s", errOut)
	assert.Equal(t, `conformance concurrency plugin PASS
conformance tokenbucket plugin PASS
conformance fixedwindow plugin PASS
conformance slidingwindow plugin PASS
conformance circuit-breaker plugin PASS
conformance adaptive-throttle plugin PASS
conformance endpoint-concurrency plugin PASS
conformance zstd plugin PASS
conformance s2 plugin PASS
conformance gzip plugin PASS
conformance br plugin PASS
conformance identity plugin PASS
`, out)
}

// TestConformanceOneKind: --kind tests only that kind; -v shows every
// check.
func TestConformanceOneKind(t *testing.T) {
	code, out, errOut := runCommand("conformance", "--plugin", limitersPlugin(t), "--kind", "tokenbucket", "-v")
	assert.Equal(t, exitOK, code, "stderr:\n%s", errOut)
	assert.Equal(t, "conformance tokenbucket plugin PASS\n", out)
	for _, check := range []string{"NeverAboveLimitConcurrently", "NoFreeBurst", "RaiseNeverRefills", "RetryHints"} {
		assert.Contains(t, errOut, "tokenbucket/"+check+" PASS")
	}
	assert.Contains(t, errOut, "tokenbucket/ShrinkNeverRevokes SKIP")
}

// TestConformanceCatchesABrokenPlugin: a kind that credits a double
// release fails, naming the check and what it saw; a kind without declared
// capabilities fails with the fix; a sound kind in the same binary passes;
// the command exits 1.
func TestConformanceCatchesABrokenPlugin(t *testing.T) {
	code, out, errOut := runCommand("conformance", "--plugin", brokenPlugin(t))
	assert.Equal(t, exitFail, code)
	assert.Equal(t, `conformance demo.sound plugin PASS
conformance demo.double-credit plugin FAIL
conformance demo.undeclared plugin FAIL
`, out)
	assert.Contains(t, errOut, "demo.double-credit/ExactlyOnceRelease FAIL")
	assert.Contains(t, errOut, "after a double Release")
	assert.Contains(t, errOut, "demo.undeclared declares no conformance capabilities")
	assert.NotContains(t, errOut, "demo.sound/", "passing checks are quiet without -v")

	code, out, _ = runCommand("conformance", "--plugin", brokenPlugin(t), "--kind", "demo.sound")
	assert.Equal(t, exitOK, code)
	assert.Equal(t, "conformance demo.sound plugin PASS\n", out)
}

func codecsPlugin(t *testing.T) string {
	return pluginBinary(t, "codecplugin", "github.com/sluicerpc/sluice/cmd/sluice/internal/codecplugin")
}

// TestConformanceCodecPlugin: every built-in codec passes the codec suite
// through a plugin subprocess, one line each, and a broken one (it decodes
// one byte short) fails, its failed check named on stderr. The suite runs
// once per codec (its 1 GiB bombs once each), all through one process.
func TestConformanceCodecPlugin(t *testing.T) {
	code, out, errOut := runCommand("conformance", "--plugin", codecsPlugin(t))
	assert.Equal(t, exitFail, code, "stderr:\n%s", errOut)
	assert.Equal(t, `conformance zstd plugin PASS
conformance s2 plugin PASS
conformance gzip plugin PASS
conformance br plugin PASS
conformance identity plugin PASS
conformance lossy plugin FAIL
`, out, "stderr:\n%s", errOut)
	assert.Contains(t, errOut, "lossy/RoundTrips FAIL")
	assert.NotContains(t, errOut, "zstd/", "passing checks are quiet without -v")

	code, _, errOut = runCommand("conformance", "--plugin", codecsPlugin(t), "--kind", "nope")
	assert.Equal(t, exitFail, code)
	assert.Contains(t, errOut, `codecs: ["zstd" "s2" "gzip" "br" "identity" "lossy"]`)
}

func TestConformanceCommandLineErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no plugin", []string{}, exitUsage, "--plugin is required"},
		{"extra argument", []string{"--plugin", "x", "y"}, exitUsage, "unexpected arguments"},
		{"bad timeout", []string{"--plugin", "x", "--call-timeout", "0s"}, exitUsage, "--call-timeout must be positive"},
		{"unknown flag", []string{"--nope"}, exitUsage, "flag provided but not defined"},
		{"missing binary", []string{"--plugin", filepath.Join(t.TempDir(), "absent")}, exitFail, "sluice conformance: sluice/plugin: start"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := runCommand(append([]string{"conformance"}, tt.args...)...)
			assert.Equal(t, tt.code, code)
			assert.Empty(t, out)
			assert.Contains(t, errOut, tt.want)
		})
	}
	t.Run("unknown kind", func(t *testing.T) {
		code, out, errOut := runCommand("conformance", "--plugin", limitersPlugin(t), "--kind", "nope")
		assert.Equal(t, exitFail, code)
		assert.Empty(t, out)
		assert.Contains(t, errOut, `no limiter kind "nope"`)
		assert.Contains(t, errOut, "slidingwindow", "the error lists the kinds served")
		assert.Contains(t, errOut, "circuit-breaker", "and the endpoint policies")
	})
	t.Run("help", func(t *testing.T) {
		code, _, errOut := runCommand("conformance", "-h")
		assert.Equal(t, exitOK, code)
		assert.True(t, strings.Contains(errOut, "usage: sluice conformance --plugin PATH"), errOut)
	})
}
