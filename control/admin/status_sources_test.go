package admin_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/control"
)

// TestStatusShowsWhatEachSourceLastReported (issue 26 section 2): a file
// source that cannot read its file says so in /v1/status, with the error
// and since when, while the configuration in force is kept; once it reads
// the file again it is ok.
func TestStatusShowsWhatEachSourceLastReported(t *testing.T) {
	a := newAPI(t)
	st, err := a.cl.Status(context.Background())
	require.NoError(t, err)
	assert.Empty(t, st.Sources, "no source reported yet")

	a.ctl.ReportSource(control.SourceFile, "/etc/sluice.yaml", errors.New("open /etc/sluice.yaml: permission denied"))
	r := a.do(http.MethodGet, "/v1/status", nil)
	require.Equal(t, http.StatusOK, r.code)
	var raw struct {
		Sources map[string]map[string]any `json:"sources"`
	}
	require.NoError(t, json.Unmarshal(r.body, &raw), "%s", r.body)
	file := raw.Sources["file"]
	assert.Equal(t, false, file["ok"])
	assert.Equal(t, "open /etc/sluice.yaml: permission denied", file["last_error"])
	assert.Equal(t, "/etc/sluice.yaml", file["origin"])
	assert.NotEmpty(t, file["since"])

	a.ctl.ReportSource(control.SourceFile, "/etc/sluice.yaml", nil)
	st, err = a.cl.Status(context.Background())
	require.NoError(t, err)
	assert.True(t, st.Sources["file"].OK)
	assert.Empty(t, st.Sources["file"].LastError)
}
