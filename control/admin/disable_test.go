package admin_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/config"
	"github.com/sluicerpc/sluice/kernel"
	"github.com/sluicerpc/sluice/limiters/concurrency"
	"github.com/sluicerpc/sluice/server"
	"github.com/sluicerpc/sluice/spi"
)

const docWithComments = `# the fleet's configuration
version: 1
server:
  # admission goes
  admission:
    global:
      limits: [{kind: concurrency, limit: 2}]
  # calls stay
  calls: {per_connection: 8, per_server: 64}
  streams:
    window: 128KiB # a comment at the end of a line
`

// DELETE /v1/config/admission disables admission and keeps every other
// setting and the document's comments; If-Match is required as for PUT.
func TestDeleteAdmissionKeepsTheRest(t *testing.T) {
	a := newAPI(t)
	r := a.do(http.MethodDelete, "/v1/config/admission", nil, "If-Match", `"0"`)
	assert.Equal(t, http.StatusOK, r.code, "no document, admission disabled already: unchanged")
	assert.Equal(t, `"0"`, r.header.Get("ETag"))

	require.Equal(t, http.StatusOK, a.put(docWithComments, `"0"`).code)
	r = a.do(http.MethodDelete, "/v1/config/admission", nil)
	assert.Equal(t, http.StatusPreconditionRequired, r.code)
	r = a.do(http.MethodDelete, "/v1/config/admission", nil, "If-Match", `"0"`)
	assert.Equal(t, http.StatusPreconditionFailed, r.code)
	assert.True(t, a.srv.Admission().Enabled(), "nothing changed")

	res, err := a.cl.DisableAdmission(context.Background(), 1)
	require.NoError(t, err)
	assert.Equal(t, uint64(2), res.Generation)
	assert.False(t, res.Unchanged)
	assert.False(t, a.srv.Admission().Enabled())
	assert.Equal(t, 8, a.srv.CallCapacity().PerConnection)
	assert.Equal(t, 64, a.srv.CallCapacity().PerServer)
	assert.Equal(t, 128<<10, a.srv.StreamWindow())

	cfg, err := a.cl.Get(context.Background())
	require.NoError(t, err)
	assert.Equal(t, `# the fleet's configuration
version: 1
server:
  # calls stay
  calls: {per_connection: 8, per_server: 64}
  streams:
    window: 128KiB # a comment at the end of a line
`, string(cfg.Document))
	before, err := config.Parse([]byte(docWithComments), "")
	require.NoError(t, err)
	after, err := config.Parse(cfg.Document, "")
	require.NoError(t, err)
	before.Server.Admission = nil
	assert.Equal(t, before.Server, after.Server)

	// Again: nothing to remove, unchanged.
	res, err = a.cl.DisableAdmission(context.Background(), 2)
	require.NoError(t, err)
	assert.True(t, res.Unchanged)
	assert.Equal(t, uint64(2), a.ctl.Generation())
}

// A JSON document stays JSON.
func TestDeleteAdmissionOfAJSONDocument(t *testing.T) {
	a := newAPI(t)
	require.Equal(t, http.StatusOK, a.put(`{"version": 1, "server": {"admission": {"global": {"limits": [{"kind": "concurrency", "limit": 2}]}}, "calls": {"per_connection": 8}}}`, `"0"`).code)
	res, err := a.cl.DisableAdmission(context.Background(), 1)
	require.NoError(t, err)
	assert.Equal(t, uint64(2), res.Generation)
	assert.False(t, a.srv.Admission().Enabled())
	assert.Equal(t, 8, a.srv.CallCapacity().PerConnection)
	cfg, err := a.cl.Get(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "application/json", cfg.ContentType)
	assert.JSONEq(t, `{"version": 1, "server": {"calls": {"per_connection": 8}}}`, string(cfg.Document))
}

// A server built with its admission and no document in force: DELETE
// turns admission off and keeps every other setting as it is.
func TestDeleteAdmissionWithoutADocument(t *testing.T) {
	a := newAPIOf(t, newServerWith(t, server.Options{
		Admission: &kernel.Options{Global: kernel.Rule{Limits: []spi.Spec{concurrency.Spec(3)}}},
		Calls:     server.CallCapacity{PerConnection: 7, PerServer: 70},
	}))
	r := a.do(http.MethodDelete, "/v1/config/admission", nil)
	assert.Equal(t, http.StatusPreconditionRequired, r.code)
	r = a.do(http.MethodDelete, "/v1/config/admission", nil, "If-Match", `"0"`)
	assert.Equal(t, http.StatusPreconditionFailed, r.code)
	assert.True(t, a.srv.Admission().Enabled(), "nothing changed")
	r = a.do(http.MethodDelete, "/v1/config/admission", nil, "If-Match", `"1"`)
	require.Equal(t, http.StatusOK, r.code, "%s", r.body)
	assert.Equal(t, `"2"`, r.header.Get("ETag"))
	assert.False(t, a.srv.Admission().Enabled())
	assert.Equal(t, server.CallCapacity{PerConnection: 7, PerServer: 70}, a.srv.CallCapacity(), "the rest is kept")
}
