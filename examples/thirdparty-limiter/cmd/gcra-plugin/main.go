// Command gcra-plugin serves the example.com/gcra limiter kind as a sluice
// plugin binary, with its conformance capabilities: a host loads it with
// plugin.LoadLimiterKind, and "sluice conformance --plugin gcra-plugin"
// tests it.
package main

import (
	"github.com/sluicerpc/sluice/examples/thirdparty-limiter/gcra"
	"github.com/sluicerpc/sluice/examples/thirdparty-limiter/gcra/gcratest"
	"github.com/sluicerpc/sluice/plugin"
)

func main() {
	caps := gcratest.Capabilities()
	plugin.Serve(plugin.ServeConfig{
		LimiterKinds: []plugin.LimiterKindEntry{{Kind: gcra.Kind{}, Capabilities: &caps}},
		Logger:       plugin.NewPluginLogger("gcra-plugin"),
	})
}
