package plugintest_test

import (
	"fmt"

	"go.uber.org/goleak"

	"github.com/sluicerpc/sluice/plugin/plugintest"
)

// A test package that opens plugins checks for leaked goroutines with the
// options, in its TestMain:
//
//	func TestMain(m *testing.M) {
//		goleak.VerifyTestMain(m, plugintest.IgnoreLeaks()...)
//	}
//
// or once, where it decides, with goleak.Find (no plugin was opened here:
// nothing is left).
func ExampleIgnoreLeaks() {
	fmt.Println(goleak.Find(plugintest.IgnoreLeaks()...))
	// Output: <nil>
}
