package gcra_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/sluicerpc/sluice/conformance"
	"github.com/sluicerpc/sluice/examples/thirdparty-limiter/gcra"
	"github.com/sluicerpc/sluice/plugin"
	"github.com/sluicerpc/sluice/spi"
)

// buildPlugin builds cmd/gcra-plugin into a temporary directory and returns
// the binary's path. It inherits the environment, so GOWORK=off (or the
// repository's go.work, once it lists this module) applies to the build.
func buildPlugin(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and starts a plugin binary")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "gcra-plugin")
	cmd := exec.Command("go", "build", "-o", bin, "github.com/sluicerpc/sluice/examples/thirdparty-limiter/cmd/gcra-plugin")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build cmd/gcra-plugin: %v\n%s", err, out)
	}
	// Plugins put their unix sockets in TMPDIR; keep them in dir.
	t.Setenv("TMPDIR", dir)
	return bin
}

// TestPluginConformance runs the conformance suite against the kind served
// by the gcra-plugin binary, with the capabilities the binary declares:
// every check loads its own plugin process.
func TestPluginConformance(t *testing.T) {
	bin := buildPlugin(t)
	conformance.RunLimiterTests(t, func(t *testing.T) (conformance.LimiterHarness, error) {
		k, err := plugin.LoadLimiterKind(bin)
		if err != nil {
			return nil, err
		}
		if k.Name() != gcra.Name {
			_ = k.Close()
			t.Fatalf("the plugin serves %q, want %q", k.Name(), gcra.Name)
		}
		caps, ok := k.Capabilities()
		if !ok {
			_ = k.Close()
			t.Fatal("the plugin declares no capabilities")
		}
		return conformance.HarnessOf(k, caps, func() { _ = k.Close() }), nil
	})
}

// TestPluginRegister loads the plugin into a registry as a host would.
func TestPluginRegister(t *testing.T) {
	bin := buildPlugin(t)
	k, err := plugin.LoadLimiterKind(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = k.Close() }()
	var reg spi.Registry
	if err := k.Register(&reg); err != nil {
		t.Fatal(err)
	}
	if got, err := reg.Lookup(gcra.Name); err != nil || got != spi.LimiterKind(k) {
		t.Fatalf("Lookup(%q) = %v, %v", gcra.Name, got, err)
	}
	if k.Pid() == 0 || k.Pid() == os.Getpid() {
		t.Fatalf("plugin pid %d", k.Pid())
	}
}
