package config_test

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/config"
	"github.com/sluicerpc/sluice/kernel"
)

// A method the program does not serve is found by the kernel, not by the
// document: Explain puts the kernel's problem at the document's field and
// line.
func TestExplainPlacesKernelProblemsInTheDocument(t *testing.T) {
	doc, err := config.Parse([]byte(`version: 1
server:
  admission:
    methods:
      "echo/Nope":
        limits:
          - {kind: concurrency, limit: 2}
    queue:
      max_queued_calls: 4
      max_queued_bytes: 1MiB
      max_queue_delay: 1s
`), "sluice.yaml")
	require.NoError(t, err)
	st, err := doc.ServerSettings(nil)
	require.NoError(t, err)
	var cat kernel.CatalogBuilder
	cat.MustAdd("echo", "Say")
	k, err := kernel.New(kernel.Config{Catalog: cat.Build()})
	require.NoError(t, err)
	_, kerr := k.Enable(*st.Admission)
	require.Error(t, kerr)
	got := doc.Explain(kerr)
	var ce *config.Error
	require.True(t, errors.As(got, &ce), "%v", got)
	require.Len(t, ce.Problems, 1)
	p := ce.Problems[0]
	assert.Equal(t, `server.admission.methods["echo/Nope"]`, p.Path[:len(`server.admission.methods["echo/Nope"]`)], p.Path)
	assert.Equal(t, 6, p.Line, "the line of the method's rule (positions are those of values): %v", p)
	assert.Contains(t, got.Error(), "sluice.yaml:6:9: ")

	other := errors.New("not a candidate error")
	assert.Same(t, other, doc.Explain(other))
}

func TestDocumentPaths(t *testing.T) {
	for field, want := range map[string]string{
		`Methods["echo/Say"].Limits[0].limit`: `.methods["echo/Say"].limits[0].limit`,
		`Queue.MaxQueueDelay`:                 `.queue.max_queue_delay`,
		`Services["a.b]c"]`:                   `.services["a.b]c"]`,
		`Global.Limits[1]`:                    `.global.limits[1]`,
		`Partition.Selector`:                  `.partition.selector`,
		`Methods["x\"]"].Limits[0]`:           `.methods["x\"]"].limits[0]`,
	} {
		assert.Equal(t, want, config.DocumentPath(field), field)
	}
}
