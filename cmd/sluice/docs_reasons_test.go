package main

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/kernel"
	"github.com/sluicerpc/sluice/kernel/governor"
	"github.com/sluicerpc/sluice/server"
)

// reasonsSent are the reasons a sluice server puts in Error frames: the
// admission kernel's refusals (kernel.Reason, every value but none), the
// call capacity's, the governor's byte budgets', and the drain's
// (server/call.go's reasonDraining, not exported).
func reasonsSent() []string {
	var out []string
	for r := kernel.ReasonNone + 1; r.String() != "reason(?)"; r++ {
		out = append(out, r.String())
	}
	return append(out, governor.CallCapacityReason, server.ReasonRetainedBytes, server.ReasonDecodedBytes, "draining")
}

// docs/protocol.md lists exactly the reasons the server sends: one row
// each in its Reasons table, none missing, none extra.
func TestProtocolDocListsTheReasonsTheServerSends(t *testing.T) {
	doc, err := os.ReadFile("../../docs/protocol.md")
	require.NoError(t, err)
	_, section, ok := strings.Cut(string(doc), "\n#### Reasons\n")
	require.True(t, ok, "docs/protocol.md has a Reasons section")
	section, _, _ = strings.Cut(section, "\n#")
	var listed []string
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z_]+)` +\\|").FindAllStringSubmatch(section, -1) {
		listed = append(listed, m[1])
	}
	want := reasonsSent()
	slices.Sort(want)
	slices.Sort(listed)
	assert.Equal(t, want, listed)
}
