// Command testplugin serves testkind.Kind over the plug-in bridge; the
// plugin package's tests build and load it.
package main

import (
	"github.com/sluicerpc/sluice/plugin"
	"github.com/sluicerpc/sluice/plugin/internal/testkind"
)

func main() { plugin.ServeLimiterKind(testkind.Kind{}) }
