package admin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
)

// Client is a client of the admin API.
type Client struct {
	// BaseURL is the API's root, "http://127.0.0.1:7879".
	BaseURL string
	// Token is the bearer token.
	Token []byte
	// HTTPClient makes the requests; nil: http.DefaultClient.
	HTTPClient *http.Client
}

// Error is an error response of the API.
type Error struct {
	// StatusCode is the HTTP status; Body the decoded error body (its
	// Error is the status line when the body was not JSON).
	StatusCode int
	Body       ErrorBody
}

func (e *Error) Error() string {
	return fmt.Sprintf("admin API: %d %s: %s", e.StatusCode, http.StatusText(e.StatusCode), e.Body.Error)
}

// Config is the configuration in force (GET /v1/config).
type Config struct {
	// Generation is the server's generation (the ETag).
	Generation uint64
	// Document is the document as given, nil while the server runs its
	// initial configuration; ContentType says whether it is YAML or JSON.
	Document    []byte
	ContentType string
	// Source, Origin and Revision say where the document came from
	// (Source "initial" without one); ConfigGeneration is the generation
	// it was applied at.
	Source           string
	Origin           string
	Revision         int64
	ConfigGeneration uint64
}

// Get returns the configuration in force. Without a document (the
// server's initial configuration) it returns a Config with a nil
// Document and the generation, and no error.
func (c *Client) Get(ctx context.Context) (*Config, error) {
	resp, body, err := c.do(ctx, http.MethodGet, "/v1/config", nil, nil)
	if err != nil {
		return nil, err
	}
	src := resp.Header.Get("Sluice-Config-Source")
	initial := resp.StatusCode == http.StatusNotFound && src == "initial"
	if resp.StatusCode != http.StatusOK && !initial {
		return nil, errorOf(resp, body)
	}
	gen, err := parseETag(resp.Header.Get("ETag"))
	if err != nil {
		return nil, err
	}
	cfg := &Config{Generation: gen, Source: src, Origin: resp.Header.Get("Sluice-Config-Origin")}
	cfg.ConfigGeneration, _ = strconv.ParseUint(resp.Header.Get("Sluice-Config-Generation"), 10, 64)
	cfg.Revision, _ = strconv.ParseInt(resp.Header.Get("Sluice-Etcd-Revision"), 10, 64)
	if !initial {
		cfg.Document, cfg.ContentType = body, resp.Header.Get("Content-Type")
	}
	return cfg, nil
}

// Status returns the API's status.
func (c *Client) Status(ctx context.Context) (*Status, error) {
	var st Status
	if err := c.call(ctx, http.MethodGet, "/v1/status", nil, nil, &st); err != nil {
		return nil, err
	}
	return &st, nil
}

// Put applies doc derived from generation ifMatch.
func (c *Client) Put(ctx context.Context, doc []byte, ifMatch uint64) (*Result, error) {
	var res Result
	if err := c.call(ctx, http.MethodPut, "/v1/config", &ifMatch, doc, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// Plan returns what Put(doc) would do. ifMatch nil: against the current
// generation (Plan.Generation says which).
func (c *Client) Plan(ctx context.Context, doc []byte, ifMatch *uint64) (*Plan, error) {
	var p Plan
	if err := c.call(ctx, http.MethodPost, "/v1/config?dry_run=true", ifMatch, doc, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// DisableAdmission removes server.admission from the document in force,
// derived from generation ifMatch.
func (c *Client) DisableAdmission(ctx context.Context, ifMatch uint64) (*Result, error) {
	var res Result
	if err := c.call(ctx, http.MethodDelete, "/v1/config/admission", &ifMatch, nil, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// call makes a request that answers 200 with a JSON body decoded into
// out.
func (c *Client) call(ctx context.Context, method, path string, ifMatch *uint64, body []byte, out any) error {
	resp, b, err := c.do(ctx, method, path, ifMatch, body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return errorOf(resp, b)
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("admin API: %s %s: decoding the answer: %w", method, path, err)
	}
	return nil
}

// maxResponse bounds what the client reads of an answer.
const maxResponse = 64 << 20

func (c *Client) do(ctx context.Context, method, path string, ifMatch *uint64, body []byte) (*http.Response, []byte, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimSuffix(c.BaseURL, "/")+path, rd)
	if err != nil {
		return nil, nil, fmt.Errorf("admin API: %w", err)
	}
	req.Header.Set("Authorization", "Bearer "+string(c.Token))
	if ifMatch != nil {
		req.Header.Set("If-Match", etag(*ifMatch))
	}
	if body != nil {
		req.Header.Set("Content-Type", contentType(body))
	}
	hc := c.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("admin API: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		return nil, nil, fmt.Errorf("admin API: %s %s: reading the answer: %w", method, path, err)
	}
	return resp, b, nil
}

func errorOf(resp *http.Response, body []byte) error {
	e := &Error{StatusCode: resp.StatusCode}
	if err := json.Unmarshal(body, &e.Body); err != nil || e.Body.Error == "" {
		e.Body = ErrorBody{Error: strings.TrimSpace(resp.Status + " " + string(body))}
	}
	return e
}

// parseETag reads a generation ETag.
func parseETag(v string) (uint64, error) {
	if len(v) < 3 || v[0] != '"' || v[len(v)-1] != '"' {
		return 0, fmt.Errorf("admin API: ETag %q is not a generation", v)
	}
	gen, err := strconv.ParseUint(v[1:len(v)-1], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("admin API: ETag %q is not a generation", v)
	}
	return gen, nil
}
