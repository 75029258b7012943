package plugin_test

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/sluicerpc/sluice/plugin"
	"github.com/sluicerpc/sluice/plugin/internal/testkind"
	"github.com/sluicerpc/sluice/plugin/plugintest"
	"go.uber.org/goleak"
)

// waitLimit bounds every wait for a process or a plugin to change state; generous for
// a loaded machine, and a passing test never waits that long.
const waitLimit = 60 * time.Second

// pluginPath is the test plugin binary TestMain builds.
var pluginPath string

const helperHostEnv = "SLUICE_PLUGIN_TEST_HELPER_HOST"

func TestMain(m *testing.M) {
	// go-plugin's in-process test connection logs at Debug to hclog's
	// default output; every logger of ours is explicit.
	hclog.DefaultOutput = io.Discard
	if os.Getenv(helperHostEnv) != "" {
		os.Exit(runHelperHost())
	}
	dir, err := os.MkdirTemp("", "sluice-plugin-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	pluginPath = filepath.Join(dir, "testplugin")
	build := exec.Command("go", "build", "-o", pluginPath, "./internal/testplugin")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building the test plugin:", err)
		_ = os.RemoveAll(dir)
		os.Exit(1)
	}
	// Plugins put their unix sockets in TMPDIR; a plugin killed by a test
	// cannot remove its socket, so keep them in dir.
	if err := os.Setenv("TMPDIR", dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	if code == 0 {
		// go-plugin and grpc stop some background goroutines
		// asynchronously after Kill/Close; goleak retries for a while
		// before it reports, and these are the known long-lived ones.
		if err := goleak.Find(plugintest.IgnoreLeaks()...); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// runHelperHost is the helper host's main: it loads the plugin, reports its
// pid and waits to be killed.
func runHelperHost() int {
	k, err := plugin.LoadLimiterKind(os.Getenv("SLUICE_PLUGIN_TEST_PLUGIN"), plugin.WithLogger(quietLogger()))
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper host:", err)
		return 1
	}
	if _, err := k.New(testkind.Params(1), time.Now()); err != nil {
		fmt.Fprintln(os.Stderr, "helper host:", err)
		return 1
	}
	fmt.Printf("plugin-pid %d\n", k.Pid())
	for {
		time.Sleep(time.Hour)
	}
}
