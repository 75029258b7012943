package admin

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/sluicerpc/sluice/control"
	"github.com/sluicerpc/sluice/kernel"
)

// bodyName names a request's document in its problems.
const bodyName = "request body"

// getConfig: GET /v1/config.
func (h *handler) getConfig(w http.ResponseWriter, r *http.Request) {
	gen := h.ctl.Generation() // first: an ETag older than the document is refused by a PUT, never the reverse
	cur := h.ctl.Current()
	hd := w.Header()
	hd.Set("ETag", etag(gen))
	hd.Set("Cache-Control", "no-store")
	hd.Set("Sluice-Config-Generation", strconv.FormatUint(cur.Generation, 10))
	hd.Set("Sluice-Config-Source", sourceName(cur))
	if cur.Origin != "" {
		hd.Set("Sluice-Config-Origin", cur.Origin)
	}
	if cur.Revision != 0 {
		hd.Set("Sluice-Etcd-Revision", strconv.FormatInt(cur.Revision, 10))
	}
	if cur.Document == nil {
		writeError(w, http.StatusNotFound, ErrorBody{
			Error:      fmt.Sprintf("no configuration document in force: the server runs the configuration it was started with (generation %d); PUT one with If-Match: %s", gen, etag(gen)),
			Generation: &gen,
		})
		return
	}
	hd.Set("Content-Type", contentType(cur.Document))
	hd.Set("Content-Length", strconv.Itoa(len(cur.Document)))
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(cur.Document)
}

// contentType is application/json for a JSON document, application/yaml
// otherwise.
func contentType(doc []byte) string {
	if t := bytes.TrimLeft(doc, " \t\r\n"); len(t) > 0 && t[0] == '{' {
		return "application/json"
	}
	return "application/yaml"
}

// status: GET /v1/status.
func (h *handler) status(w http.ResponseWriter, r *http.Request) {
	gen := h.ctl.Generation()
	w.Header().Set("ETag", etag(gen))
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, statusJSON(h.ctl.Status(), gen))
}

// putConfig: PUT /v1/config.
func (h *handler) putConfig(w http.ResponseWriter, r *http.Request) {
	expected, ok := h.requireIfMatch(w, r)
	if !ok {
		return
	}
	doc, ok := h.readBody(w, r)
	if !ok {
		return
	}
	h.apply(w, r, expected, doc)
}

// apply applies doc derived from generation expected and answers.
func (h *handler) apply(w http.ResponseWriter, r *http.Request, expected uint64, doc []byte) {
	a, err := h.ctl.Apply(control.Change{Source: control.SourceAdmin, Origin: r.RemoteAddr, Document: doc, Name: bodyName, Expected: expected})
	if err != nil {
		h.writeChangeError(w, err)
		return
	}
	w.Header().Set("ETag", etag(a.Generation))
	writeJSON(w, http.StatusOK, Result{Generation: a.Generation, Previous: expected, Unchanged: a.Unchanged,
		Source: sourceName(a), Origin: a.Origin, AppliedAt: a.At})
}

// postConfig: POST /v1/config?dry_run=true.
func (h *handler) postConfig(w http.ResponseWriter, r *http.Request) {
	if dry, err := strconv.ParseBool(r.URL.Query().Get("dry_run")); err != nil || !dry {
		writeError(w, http.StatusBadRequest, ErrorBody{Error: "POST /v1/config is the dry run and requires ?dry_run=true; apply a document with PUT"})
		return
	}
	expected, present, err := ifMatch(r)
	if err != nil {
		writeError(w, http.StatusBadRequest, ErrorBody{Error: err.Error()})
		return
	}
	doc, ok := h.readBody(w, r)
	if !ok {
		return
	}
	ch := control.Change{Source: control.SourceAdmin, Origin: r.RemoteAddr, Document: doc, Name: bodyName, Expected: expected, Latest: !present}
	p, err := h.ctl.Plan(ch)
	if err != nil {
		h.writeChangeError(w, err)
		return
	}
	w.Header().Set("ETag", etag(p.Generation))
	writeJSON(w, http.StatusOK, planJSON(p))
}

// deleteAdmission: DELETE /v1/config/admission.
func (h *handler) deleteAdmission(w http.ResponseWriter, r *http.Request) {
	expected, ok := h.requireIfMatch(w, r)
	if !ok {
		return
	}
	cur := h.ctl.Current()
	if cur.Document == nil {
		// The configuration the server was built with: admission off,
		// every other setting kept as it is.
		a, err := h.ctl.DisableAdmission(control.SourceAdmin, r.RemoteAddr, expected)
		if err != nil {
			h.writeChangeError(w, err)
			return
		}
		w.Header().Set("ETag", etag(a.Generation))
		writeJSON(w, http.StatusOK, Result{Generation: a.Generation, Previous: expected, Unchanged: a.Unchanged,
			Source: string(control.SourceAdmin), Origin: a.Origin, AppliedAt: a.At})
		return
	}
	if cur.Generation != expected {
		// The document read is not the one of the generation the client
		// saw (it moved, or a writer outside the Controller published).
		gen := h.ctl.Generation()
		writeError(w, http.StatusPreconditionFailed, conflictBody(expected, gen, cur.Generation))
		return
	}
	doc, err := withoutAdmission(cur.Document)
	if err != nil {
		writeError(w, http.StatusInternalServerError, ErrorBody{Error: "removing server.admission from the document in force: " + err.Error()})
		return
	}
	// Apply checks that the generation is still expected: the document
	// is derived from exactly the one the client named.
	h.apply(w, r, expected, doc)
}

// requireIfMatch reads If-Match, answering 428 without it and 400 when it
// is malformed.
func (h *handler) requireIfMatch(w http.ResponseWriter, r *http.Request) (uint64, bool) {
	gen, present, err := ifMatch(r)
	switch {
	case err != nil:
		writeError(w, http.StatusBadRequest, ErrorBody{Error: err.Error()})
		return 0, false
	case !present:
		cur := h.ctl.Generation()
		writeError(w, http.StatusPreconditionRequired, ErrorBody{
			Error:   fmt.Sprintf("If-Match required: the generation the change is derived from (the ETag of GET /v1/config; now %s)", etag(cur)),
			Current: &cur,
		})
		return 0, false
	}
	return gen, true
}

// readBody reads the request's document within the bound, answering 413
// beyond it.
func (h *handler) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.maxBody))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		writeError(w, http.StatusRequestEntityTooLarge, ErrorBody{Error: fmt.Sprintf("the document exceeds %d bytes", tooLarge.Limit)})
		return nil, false
	case err != nil:
		writeError(w, http.StatusBadRequest, ErrorBody{Error: "reading the request body: " + err.Error()})
		return nil, false
	}
	return b, true
}

// writeChangeError answers an error of Apply or Plan, which changed
// nothing.
func (h *handler) writeChangeError(w http.ResponseWriter, err error) {
	var pc *kernel.PublicationConflictError
	switch {
	case errors.As(err, &pc):
		writeError(w, http.StatusPreconditionFailed, conflictBody(pc.Expected, pc.Current, 0))
	case errors.Is(err, kernel.ErrLifecycleClosed):
		writeError(w, http.StatusServiceUnavailable, ErrorBody{Error: "the server has stopped: its configuration no longer changes"})
	default:
		// Reconfigure's and the document's verdicts: the document is
		// invalid.
		writeError(w, http.StatusUnprocessableEntity, ErrorBody{Error: err.Error(), Problems: problemsOf(err)})
	}
}

// conflictBody is the 412 body; docGen, when not 0 and not current, is
// the generation of the document in force.
func conflictBody(expected, current, docGen uint64) ErrorBody {
	msg := fmt.Sprintf("the generation moved: the change was derived from %d, the current one is %d; GET the configuration again and derive the change from it", expected, current)
	if docGen != 0 && docGen != current {
		msg = fmt.Sprintf("the document in force is of generation %d and the server is at %d (a writer outside the controller published); PUT a complete document", docGen, current)
	}
	return ErrorBody{Error: msg, Expected: &expected, Current: &current}
}
