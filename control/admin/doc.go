// Package admin is the admin HTTP API of a running server: it reads the
// configuration in force and writes complete configuration documents
// through a control.Controller, the one writer path, with the generation
// as ETag for compare-and-set. Client is its Go client (sluice admin).
//
// # Contract
//
// Off by default; Listen refuses addresses that are not loopback unless
// told otherwise. Every request needs "Authorization: Bearer <token>"
// (the scheme is case-insensitive); the token is compared in constant
// time, on SHA-256 digests so that its length leaks nothing either.
// Without a valid one: 401 with "WWW-Authenticate: Bearer", whatever the
// path (but the dashboard's static assets, below). Every error body is JSON: {"error": "..."} plus the fields the
// error has (below). Unknown paths are 404; a known path with another
// method is 405 with Allow.
//
// The generation (the server's, control.Controller.Generation) is the
// version of the whole configuration and the ETag: `"<generation>"`, a
// strong ETag. If-Match takes exactly one such ETag; anything else
// (several, "*", a weak or unquoted one) is 400.
//
//	GET /v1/config (and HEAD)
//	  200: the document in force, as it was given (Content-Type
//	  application/json when it was JSON, application/yaml otherwise).
//	  404 {"error", "generation"} while the server runs the configuration
//	  it was started with (no document applied yet: there is nothing to
//	  return, and an empty document would not describe it); the ETag is
//	  set all the same, so that a PUT can follow.
//	  Headers: ETag; Sluice-Config-Generation (the generation the
//	  document was applied at: differs from the ETag when a writer
//	  outside the Controller published since), Sluice-Config-Source
//	  (file, admin, etcd, api; "initial" for none), Sluice-Config-Origin,
//	  Sluice-Etcd-Revision (etcd documents).
//
//	GET /v1/status
//	  200 Status (JSON): the generation, the document's source, origin,
//	  etcd revision and time, in_sync, the last rejection with its
//	  problems, the counts by source.
//
//	PUT /v1/config
//	  The body is a complete document (YAML or JSON, at most
//	  Options.MaxBodyBytes: 413 beyond), applied as one change of source
//	  "admin" whose origin is the client's address. If-Match is required
//	  (428 without, 400 malformed). 200 Result with the new ETag; a
//	  document equal to the one in force publishes nothing: 200, the same
//	  ETag, "unchanged": true. 412 {"error", "expected", "current"} when
//	  the generation moved; 422 {"error", "problems": [{path, line,
//	  column, reason}]} when the document is invalid (lines of the body);
//	  503 once the server has stopped. Nothing changes on any error.
//
//	POST /v1/config?dry_run=true
//	  The dry run of PUT: the same body, checks and errors, and the Plan
//	  (JSON) of what PUT would do, without doing it. If-Match is optional:
//	  without it the plan is computed against the current generation. The
//	  response's ETag is the generation the plan was computed against, so
//	  that a PUT with it applies exactly what was planned (or gets 412).
//	  A POST without dry_run=true is 400: PUT is the only write.
//
//	Query parameters: dry_run on POST /v1/config is the only one. Any other
//	(PUT /v1/config?dry_run=true among them) is 400 before the request
//	runs: a parameter is never ignored.
//
//	DELETE /v1/config/admission
//	  Disables admission: the document in force with server.admission
//	  removed (every other field, and a YAML document's comments, kept),
//	  applied like a PUT (If-Match required; the same results). While no
//	  document is in force (the server runs the configuration it was
//	  built with), admission is turned off and every other setting kept
//	  as it is (control.Controller.DisableAdmission). Admission already
//	  off: 200 unchanged.
//
//	GET /v1/events
//	  The server's figures as server-sent events (text/event-stream):
//	  one Sample at once, then one every Options.EventInterval (500 ms
//	  by default), each as
//
//	    id: <seq>
//	    event: sample
//	    data: <Sample as one line of JSON>
//
//	  The counters in a Sample (admitted, refused by reason) are
//	  cumulative: a client computes rates from two samples. One sampler
//	  serves every client; it runs only while at least one is connected.
//	  A client more than EventBacklog samples behind is dropped (its
//	  stream ends; a warning is logged with its address), and a write
//	  that makes no progress for EventWriteTimeout closes the connection:
//	  nothing is buffered without bound. When the server has stopped,
//	  each stream gets a last sample and "event: end", then ends.
//
// # The dashboard
//
// GET /ui/ is a page of the same origin that shows the configuration in
// force and its generation, live charts of the events (admitted and
// refused per second, queued, active permits per scope, the generation
// changes marked), and an editor that plans a document (POST dry run)
// and applies exactly that plan (PUT with If-Match of the generation the
// plan was computed against: 412 if it moved, 422 with the problems and
// their lines). Its assets (HTML, CSS, JavaScript; embedded, nothing
// from elsewhere) are the same for every server and hold no secret, so
// they are served without a token, with a Content-Security-Policy that
// lets the page talk to its own origin only. The page asks for the
// token, keeps it in the tab's sessionStorage and sends it as the
// Authorization header of every API request, the event stream's too
// (read through fetch: EventSource cannot send headers). The token never
// travels in a URL, so it reaches no access log, history or Referer;
// and a page of another origin cannot make the browser send it (it is
// not a cookie), so the API needs no CSRF defense.
package admin
