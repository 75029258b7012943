package plugintest_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/sluicerpc/sluice/plugin/plugintest"
)

// A test package that opens plugins fails on leaked goroutines, except the
// ones grpc and go-plugin stop asynchronously after a plugin is closed.
// Compile-only: it is a TestMain (and goleak run inside an example would see
// the goroutine of go test that captures the example's output).
func ExampleIgnoreLeaks() {
	testMain := func(m *testing.M) {
		goleak.VerifyTestMain(m, plugintest.IgnoreLeaks()...)
	}
	_ = testMain
}
