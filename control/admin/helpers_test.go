package admin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/control"
	"github.com/sluicerpc/sluice/control/admin"
	"github.com/sluicerpc/sluice/server"
)

const token = "0123456789abcdef-test-token"

// api is the admin API of a real server (not serving: the API needs none
// of its connections) over a real loopback HTTP server.
type api struct {
	t   *testing.T
	srv *server.Server
	ctl *control.Controller
	url string
	hc  *http.Client
	cl  *admin.Client
}

// newServer is a server of echo/Say and echo/Sleep, closed when the test
// ends.
func newServer(t *testing.T) *server.Server { return newServerWith(t, server.Options{}) }

// newServerWith is newServer built with o.
func newServerWith(t *testing.T, o server.Options) *server.Server {
	t.Helper()
	mux := server.NewMux()
	mux.HandleRaw("echo", "Say", func(_ context.Context, req []byte) ([]byte, error) { return req, nil })
	mux.HandleRaw("echo", "Sleep", func(ctx context.Context, _ []byte) ([]byte, error) { <-ctx.Done(); return nil, ctx.Err() })
	srv, err := server.New(mux, o)
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}

func newAPI(t *testing.T) *api { return newAPIOf(t, newServer(t)) }

// newAPIOf is the admin API of srv.
func newAPIOf(t *testing.T, srv *server.Server) *api {
	t.Helper()
	ctl := control.New(srv, control.Options{})
	h, err := admin.NewHandler(ctl, admin.Options{Token: []byte(token), MaxBodyBytes: 64 << 10})
	require.NoError(t, err)
	ts := httptest.NewServer(h)
	hc := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(func() {
		hc.CloseIdleConnections()
		ts.Close()
	})
	return &api{t: t, srv: srv, ctl: ctl, url: ts.URL, hc: hc, cl: &admin.Client{BaseURL: ts.URL, Token: []byte(token), HTTPClient: hc}}
}

// response is an answer read whole.
type response struct {
	code   int
	header http.Header
	body   []byte
}

// errBody decodes the JSON error body.
func (r response) errBody(t *testing.T) admin.ErrorBody {
	t.Helper()
	require.Equal(t, "application/json", r.header.Get("Content-Type"), "%s", r.body)
	var e admin.ErrorBody
	require.NoError(t, json.Unmarshal(r.body, &e), "%s", r.body)
	require.NotEmpty(t, e.Error)
	return e
}

// do sends a request with the right token and the headers given in
// pairs.
func (a *api) do(method, path string, body []byte, headers ...string) response {
	a.t.Helper()
	return a.doAuth(method, path, body, append([]string{"Authorization", "Bearer " + token}, headers...)...)
}

// doAuth sends a request with the headers given in pairs only.
func (a *api) doAuth(method, path string, body []byte, headers ...string) response {
	a.t.Helper()
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequest(method, a.url+path, rd)
	require.NoError(a.t, err)
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := a.hc.Do(req)
	require.NoError(a.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(a.t, err)
	return response{resp.StatusCode, resp.Header, b}
}

// put PUTs doc with If-Match gen.
func (a *api) put(doc string, gen string) response {
	a.t.Helper()
	return a.do(http.MethodPut, "/v1/config", []byte(doc), "If-Match", gen)
}

const docConcurrency2 = `version: 1
server:
  admission:
    global:
      limits: [{kind: concurrency, limit: 2}]
  calls: {per_connection: 8, per_server: 64}
`
