package admin

import (
	"embed"
	"fmt"
	"io/fs"
	"net/http"
	"strings"
)

// uiPath is the root of the dashboard.
const uiPath = "/ui"

// uiFiles are the dashboard's static assets: plain HTML, CSS and
// JavaScript, no build step, nothing fetched from elsewhere.
//
//go:embed ui
var uiFiles embed.FS

// uiFS is uiFiles' ui directory.
var uiFS = func() fs.FS {
	sub, err := fs.Sub(uiFiles, "ui")
	if err != nil { // a constant path of the embedded tree: cannot happen
		panic(err)
	}
	return sub
}()

// uiContentSecurityPolicy lets the page load its own scripts and styles
// and talk to its own origin only, and be framed by nobody.
const uiContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'none'; base-uri 'none'; frame-ancestors 'none'"

// uiFileServer serves uiFS under uiPath+"/".
var uiFileServer = http.StripPrefix(uiPath+"/", http.FileServerFS(uiFS))

// ui: GET /ui/ and its assets. They are the same for every server and
// hold no secret, so they need no token: the page asks for the token and
// sends it as a bearer header with every API request it makes (doc.go,
// "The dashboard"). /ui redirects to /ui/.
func (h *handler) ui(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeError(w, http.StatusMethodNotAllowed, ErrorBody{Error: "method " + r.Method + " not allowed on " + r.URL.Path + " (allowed: GET, HEAD)"})
		return
	}
	if r.URL.Path == uiPath {
		http.Redirect(w, r, uiPath+"/", http.StatusMovedPermanently)
		return
	}
	// A file the dashboard does not have is the API's JSON 404, as for
	// every other path (net/http's file server answers text/plain).
	if name := strings.TrimPrefix(r.URL.Path, uiPath+"/"); name != "" {
		if fi, err := fs.Stat(uiFS, name); err != nil || fi.IsDir() {
			writeError(w, http.StatusNotFound, ErrorBody{Error: fmt.Sprintf("no such dashboard file %q (the dashboard: %s/)", r.URL.Path, uiPath)})
			return
		}
	}
	hd := w.Header()
	hd.Set("Content-Security-Policy", uiContentSecurityPolicy)
	hd.Set("X-Content-Type-Options", "nosniff")
	hd.Set("Referrer-Policy", "no-referrer")
	hd.Set("X-Frame-Options", "DENY")
	hd.Set("Cache-Control", "no-cache")
	uiFileServer.ServeHTTP(w, r)
}
