package admin

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluicerpc/sluice/control"
)

// MinTokenLength is the shortest bearer token NewHandler accepts, in
// bytes.
const MinTokenLength = 16

// DefaultMaxBodyBytes bounds a document's size by default (4 MiB).
const DefaultMaxBodyBytes = 4 << 20

// Options configure the handler.
type Options struct {
	// Token is the bearer token every request must present; at least
	// MinTokenLength bytes.
	Token []byte
	// MaxBodyBytes bounds request bodies (413 beyond); 0:
	// DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// Logger receives a line for each refused authentication and each
	// event stream dropped for not keeping up; nil discards them. (The
	// Controller logs the changes.) No line carries a token.
	Logger *slog.Logger
	// EventInterval is the sampling period of GET /v1/events; 0:
	// DefaultEventInterval; at least MinEventInterval.
	EventInterval time.Duration
}

// handler serves the API (doc.go) for one Controller.
type handler struct {
	ctl     *control.Controller
	digest  [sha256.Size]byte
	maxBody int64
	log     *slog.Logger
	refusal *refusalLog
	hub     *hub
}

// NewHandler returns the admin API of ctl. It refuses a token shorter than
// MinTokenLength bytes, and a negative MaxBodyBytes.
func NewHandler(ctl *control.Controller, o Options) (http.Handler, error) {
	if ctl == nil {
		return nil, errors.New("admin: nil Controller")
	}
	if len(o.Token) < MinTokenLength {
		return nil, fmt.Errorf("admin: Token: %d bytes, at least %d required", len(o.Token), MinTokenLength)
	}
	if o.MaxBodyBytes < 0 {
		return nil, fmt.Errorf("admin: MaxBodyBytes: %d is negative", o.MaxBodyBytes)
	}
	if o.MaxBodyBytes == 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	switch {
	case o.EventInterval == 0:
		o.EventInterval = DefaultEventInterval
	case o.EventInterval < MinEventInterval:
		return nil, fmt.Errorf("admin: EventInterval: %v is below the minimum %v", o.EventInterval, MinEventInterval)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &handler{ctl: ctl, digest: sha256.Sum256(o.Token), maxBody: o.MaxBodyBytes, log: o.Logger,
		refusal: newRefusalLog(o.Logger), hub: newHub(ctl.Server(), o.EventInterval, o.Logger)}, nil
}

// route is one path's methods.
type route struct {
	allow    string
	handlers map[string]http.HandlerFunc
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == uiPath || strings.HasPrefix(r.URL.Path, uiPath+"/") {
		h.ui(w, r) // static assets only: no token needed (ui.go)
		return
	}
	if !h.authorized(w, r) {
		return
	}
	var rt route
	switch r.URL.Path {
	case "/v1/config":
		rt = route{"GET, HEAD, PUT, POST", map[string]http.HandlerFunc{
			http.MethodGet: h.getConfig, http.MethodHead: h.getConfig, http.MethodPut: h.putConfig, http.MethodPost: h.postConfig}}
	case "/v1/config/admission":
		rt = route{"DELETE", map[string]http.HandlerFunc{http.MethodDelete: h.deleteAdmission}}
	case "/v1/events":
		rt = route{"GET", map[string]http.HandlerFunc{http.MethodGet: h.events}}
	case "/v1/status":
		rt = route{"GET, HEAD", map[string]http.HandlerFunc{http.MethodGet: h.status, http.MethodHead: h.status}}
	default:
		writeError(w, http.StatusNotFound, ErrorBody{Error: fmt.Sprintf("no such path %q (the API: /v1/config, /v1/config/admission, /v1/status, /v1/events; the dashboard: /ui/)", r.URL.Path)})
		return
	}
	f := rt.handlers[r.Method]
	if f == nil {
		w.Header().Set("Allow", rt.allow)
		writeError(w, http.StatusMethodNotAllowed, ErrorBody{Error: fmt.Sprintf("method %s not allowed on %s (allowed: %s)", r.Method, r.URL.Path, rt.allow)})
		return
	}
	if msg := unknownQuery(r); msg != "" {
		writeError(w, http.StatusBadRequest, ErrorBody{Error: msg})
		return
	}
	f(w, r)
}

// queryParams are the query parameters each request takes, by method and
// path; any other is refused with 400 before the request runs. (A PUT
// with ?dry_run=true applied its document for real: a parameter a request
// does not read must never be ignored.)
var queryParams = map[string][]string{
	http.MethodPost + " /v1/config": {"dry_run"},
}

// unknownQuery returns the 400 message for a query parameter r's method
// and path do not take, "" when there is none.
func unknownQuery(r *http.Request) string {
	if r.URL.RawQuery == "" {
		return ""
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return fmt.Sprintf("malformed query string: %v", err)
	}
	allowed := queryParams[r.Method+" "+r.URL.Path]
	for name := range q {
		if !slices.Contains(allowed, name) {
			if r.Method == http.MethodPut && name == "dry_run" {
				return "PUT /v1/config applies its document and takes no dry_run; plan it with POST /v1/config?dry_run=true"
			}
			return fmt.Sprintf("%s %s takes no query parameter %q (it takes: %s)", r.Method, r.URL.Path, name, takes(allowed))
		}
	}
	return ""
}

func takes(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// authorized checks the bearer token and answers 401 when it is missing
// or wrong, before anything of the request's body is read, and closes the
// connection after that answer. The comparison is of SHA-256 digests, in constant time: it
// takes as long whatever the token presented, its length included.
func (h *handler) authorized(w http.ResponseWriter, r *http.Request) bool {
	auth := r.Header.Get("Authorization")
	scheme, token, ok := strings.Cut(auth, " ")
	var msg string
	switch {
	case auth == "":
		msg = "authorization required: Authorization: Bearer <token>"
	case !ok || !strings.EqualFold(scheme, "Bearer"):
		msg = "authorization scheme must be Bearer"
	default:
		d := sha256.Sum256([]byte(strings.TrimSpace(token)))
		if subtle.ConstantTimeCompare(d[:], h.digest[:]) == 1 {
			return true
		}
		msg = "invalid token"
	}
	h.refusal.refused(r.RemoteAddr, r.Method, r.URL.Path, msg)
	// Nothing of an unauthenticated body is read: the connection closes
	// after the answer. net/http would drain up to 256 KiB of an unread
	// body after the handler (an endless chunked one held the connection
	// for the read timeout); a read deadline in the past makes that
	// drain fail at once, after the answer is flushed.
	w.Header().Set("Connection", "close")
	_ = http.NewResponseController(w).SetReadDeadline(time.Now())
	if msg == "invalid token" {
		w.Header().Set("WWW-Authenticate", `Bearer realm="sluice", error="invalid_token"`)
	} else {
		w.Header().Set("WWW-Authenticate", `Bearer realm="sluice"`)
	}
	writeError(w, http.StatusUnauthorized, ErrorBody{Error: msg})
	return false
}

// etag is the ETag of generation gen.
func etag(gen uint64) string { return `"` + strconv.FormatUint(gen, 10) + `"` }

// ifMatch reads the If-Match header: the generation, whether the header
// is there, and an error when it is malformed.
func ifMatch(r *http.Request) (gen uint64, present bool, err error) {
	vs := r.Header.Values("If-Match")
	if len(vs) == 0 {
		return 0, false, nil
	}
	v := strings.TrimSpace(strings.Join(vs, ","))
	if len(v) < 3 || v[0] != '"' || v[len(v)-1] != '"' {
		return 0, true, fmt.Errorf("If-Match %q: want one generation in quotes, like \"3\" (the ETag of GET /v1/config)", v)
	}
	gen, err = strconv.ParseUint(v[1:len(v)-1], 10, 64)
	if err != nil {
		return 0, true, fmt.Errorf("If-Match %q: want one generation in quotes, like \"3\" (the ETag of GET /v1/config)", v)
	}
	return gen, true, nil
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil { // our own types: cannot happen
		panic("admin: encoding a response: " + err.Error())
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(code)
	_, _ = w.Write(append(b, '\n'))
}

func writeError(w http.ResponseWriter, code int, body ErrorBody) {
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, code, body)
}
