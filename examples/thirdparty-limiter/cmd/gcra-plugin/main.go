// Command gcra-plugin serves the example.com/gcra limiter kind as a sluice
// plugin binary: a host loads it with plugin.LoadLimiterKind.
package main

import (
	"github.com/sluicerpc/sluice/examples/thirdparty-limiter/gcra"
	"github.com/sluicerpc/sluice/plugin"
)

func main() { plugin.ServeLimiterKind(gcra.Kind{}) }
