package admin_test

import (
	"bytes"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/control"
	"github.com/sluicerpc/sluice/control/admin"
)

// Without the right bearer token every path, known or not, is 401 with
// WWW-Authenticate: Bearer and a JSON body; the right one (scheme in any
// case) passes.
func TestEveryRequestNeedsTheToken(t *testing.T) {
	a := newAPI(t)
	for name, auth := range map[string][]string{
		"no header":         nil,
		"empty":             {"Authorization", ""},
		"wrong token":       {"Authorization", "Bearer " + strings.Repeat("x", len(token))},
		"shorter token":     {"Authorization", "Bearer " + token[:len(token)-1]},
		"longer token":      {"Authorization", "Bearer " + token + "x"},
		"prefix of scheme":  {"Authorization", "Bearer" + token},
		"wrong scheme":      {"Authorization", "Basic " + token},
		"scheme only":       {"Authorization", "Bearer"},
		"token, no scheme":  {"Authorization", token},
		"other header only": {"X-Token", token},
	} {
		for _, path := range []string{"/v1/config", "/v1/status", "/nope"} {
			r := a.doAuth(http.MethodGet, path, nil, auth...)
			assert.Equal(t, http.StatusUnauthorized, r.code, "%s %s", name, path)
			assert.True(t, strings.HasPrefix(r.header.Get("WWW-Authenticate"), "Bearer"), "%s: %q", name, r.header.Get("WWW-Authenticate"))
			r.errBody(t)
		}
		// Nor does a write get through.
		r := a.doAuth(http.MethodPut, "/v1/config", []byte(docConcurrency2), append([]string{"If-Match", `"0"`}, auth...)...)
		assert.Equal(t, http.StatusUnauthorized, r.code, name)
	}
	assert.Equal(t, uint64(0), a.ctl.Generation(), "nothing applied")
	for _, auth := range []string{"Bearer " + token, "bearer " + token, "BEARER  " + token} {
		r := a.doAuth(http.MethodGet, "/v1/status", nil, "Authorization", auth)
		assert.Equal(t, http.StatusOK, r.code, "%q: %s", auth, r.body)
	}
}

// A token shorter than 16 bytes is refused.
func TestNewHandlerRefusesShortTokens(t *testing.T) {
	ctl := control.New(newServer(t), control.Options{})
	_, err := admin.NewHandler(ctl, admin.Options{Token: []byte("fifteen-bytes!!")})
	assert.ErrorContains(t, err, "Token: 15 bytes, at least 16 required")
	_, err = admin.NewHandler(ctl, admin.Options{})
	assert.ErrorContains(t, err, "Token: 0 bytes")
	_, err = admin.NewHandler(ctl, admin.Options{Token: []byte("sixteen-bytes!!!")})
	assert.NoError(t, err)
}

// Unknown paths are 404, other methods 405 with Allow, both JSON.
func TestUnknownPathsAndMethods(t *testing.T) {
	a := newAPI(t)
	for _, path := range []string{"/", "/v1", "/v1/config/", "/v2/config", "/v1/config/calls"} {
		r := a.do(http.MethodGet, path, nil)
		assert.Equal(t, http.StatusNotFound, r.code, path)
		assert.Contains(t, r.errBody(t).Error, "no such path")
	}
	for _, c := range []struct{ method, path, allow string }{
		{http.MethodDelete, "/v1/config", "GET, HEAD, PUT, POST"},
		{http.MethodPatch, "/v1/config", "GET, HEAD, PUT, POST"},
		{http.MethodGet, "/v1/config/admission", "DELETE"},
		{http.MethodPut, "/v1/config/admission", "DELETE"},
		{http.MethodPost, "/v1/status", "GET, HEAD"},
	} {
		r := a.do(c.method, c.path, nil)
		assert.Equal(t, http.StatusMethodNotAllowed, r.code, "%s %s", c.method, c.path)
		assert.Equal(t, c.allow, r.header.Get("Allow"))
		assert.Contains(t, r.errBody(t).Error, "not allowed")
	}
}

// Refused requests are logged at most once per 10 s, each line counting
// the refusals since the previous one (a flood of bad tokens made a line
// per request); the count is never lost, only carried to the next line.
func TestRefusedRequestsAreLoggedOncePerInterval(t *testing.T) {
	srv := newServer(t)
	ctl := control.New(srv, control.Options{})
	var logs bytes.Buffer
	var mu sync.Mutex
	h, err := admin.NewHandler(ctl, admin.Options{Token: []byte(token), Logger: slog.New(slog.NewTextHandler(lockedWriter{&mu, &logs}, nil))})
	require.NoError(t, err)
	now := time.Unix(1_000_000, 0)
	admin.SetRefusalClock(h, func() time.Time { return now })
	refuse := func(n int) {
		for range n {
			rec := httptest.NewRecorder()
			req := httptest.NewRequest(http.MethodGet, "/v1/status", nil)
			req.Header.Set("Authorization", "Bearer wrong-token-wrong-token")
			h.ServeHTTP(rec, req)
			require.Equal(t, http.StatusUnauthorized, rec.Code)
		}
	}
	lines := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return strings.Split(strings.TrimSpace(logs.String()), "\n")
	}
	refuse(1000)
	require.Len(t, lines(), 1, "1,000 refusals at one instant: the first is logged")
	assert.Contains(t, lines()[0], "refused=1 refused_total=1")
	now = now.Add(9 * time.Second)
	refuse(1)
	require.Len(t, lines(), 1)
	now = now.Add(time.Second)
	refuse(1)
	require.Len(t, lines(), 2)
	assert.Contains(t, lines()[1], "refused=1001 refused_total=1002", "the refusals since the previous line")
	assert.Contains(t, lines()[1], `reason="invalid token"`)
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
