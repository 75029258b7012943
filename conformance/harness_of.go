package conformance

import "github.com/sluicerpc/sluice/spi"

// HarnessOf returns the harness most kinds need: kind with caps, nothing
// to set up per check. Close runs closers in order; they release what the
// caller set up for the harness (a plugin process, say).
func HarnessOf(kind spi.LimiterKind, caps LimiterCapabilities, closers ...func()) LimiterHarness {
	return harnessOf{kind: kind, caps: caps, closers: closers}
}

type harnessOf struct {
	kind    spi.LimiterKind
	caps    LimiterCapabilities
	closers []func()
}

func (h harnessOf) Kind() spi.LimiterKind             { return h.kind }
func (h harnessOf) Capabilities() LimiterCapabilities { return h.caps }

func (h harnessOf) Close() {
	for _, c := range h.closers {
		c()
	}
}
