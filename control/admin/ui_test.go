package admin_test

import (
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The dashboard's assets are served without a token (they hold no
// secret), with a CSP that allows the page's own origin only; /ui
// redirects to /ui/; every asset index.html names is there; other methods
// are 405 and unknown assets 404; the API itself still needs the token.
func TestUIServesItsAssetsWithoutToken(t *testing.T) {
	a := newAPI(t)
	hc := &http.Client{Transport: a.hc.Transport, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := hc.Get(a.url + "/ui")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusMovedPermanently, resp.StatusCode)
	assert.Equal(t, "/ui/", resp.Header.Get("Location"))

	r := a.doAuth(http.MethodGet, "/ui/", nil)
	require.Equal(t, http.StatusOK, r.code)
	assert.Equal(t, "text/html; charset=utf-8", r.header.Get("Content-Type"))
	assert.Contains(t, r.header.Get("Content-Security-Policy"), "default-src 'none'; script-src 'self'")
	assert.Contains(t, r.header.Get("Content-Security-Policy"), "connect-src 'self'")
	assert.Equal(t, "nosniff", r.header.Get("X-Content-Type-Options"))
	assert.Equal(t, "no-referrer", r.header.Get("Referrer-Policy"))
	assert.Equal(t, "DENY", r.header.Get("X-Frame-Options"))
	page := string(r.body)
	assert.Contains(t, page, "<title>sluice dashboard</title>")
	assert.NotContains(t, page, "http://", "nothing from elsewhere")
	assert.NotContains(t, page, "https://", "nothing from elsewhere")

	assets := regexp.MustCompile(`(?:src|href)="([^"]+)"`).FindAllStringSubmatch(page, -1)
	require.NotEmpty(t, assets)
	want := map[string]string{".js": "text/javascript; charset=utf-8", ".css": "text/css; charset=utf-8"}
	for _, m := range assets {
		r := a.doAuth(http.MethodGet, "/ui/"+m[1], nil)
		assert.Equal(t, http.StatusOK, r.code, m[1])
		for ext, ct := range want {
			if strings.HasSuffix(m[1], ext) {
				assert.Equal(t, ct, r.header.Get("Content-Type"), m[1])
			}
		}
		assert.NotContains(t, string(r.body), "https://", m[1])
	}
	// The modules app.js imports.
	for _, js := range []string{"app.js", "chart.js", "events.js"} {
		assert.Equal(t, http.StatusOK, a.doAuth(http.MethodGet, "/ui/"+js, nil).code, js)
	}

	r = a.doAuth(http.MethodGet, "/ui/nope.js", nil)
	assert.Equal(t, http.StatusNotFound, r.code)
	assert.Contains(t, r.errBody(t).Error, `no such dashboard file "/ui/nope.js"`, "a JSON 404 like the API's (issue 26 section 5)")
	r = a.doAuth(http.MethodPost, "/ui/", nil)
	assert.Equal(t, http.StatusMethodNotAllowed, r.code)
	assert.Equal(t, "GET, HEAD", r.header.Get("Allow"))
	assert.Equal(t, http.StatusUnauthorized, a.doAuth(http.MethodGet, "/v1/status", nil).code)
	assert.Equal(t, http.StatusUnauthorized, a.doAuth(http.MethodGet, "/uix", nil).code, "only /ui and below")
}
