package admin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/control/admin"
	"github.com/sluicerpc/sluice/server"
)

// Before any document the server runs its initial configuration: GET is
// 404 with the generation as ETag, so that a PUT can follow.
func TestGetWithoutDocumentIs404WithTheETag(t *testing.T) {
	a := newAPI(t)
	r := a.do(http.MethodGet, "/v1/config", nil)
	assert.Equal(t, http.StatusNotFound, r.code)
	assert.Equal(t, `"0"`, r.header.Get("ETag"))
	assert.Equal(t, "initial", r.header.Get("Sluice-Config-Source"))
	e := r.errBody(t)
	assert.Contains(t, e.Error, "no configuration document in force")
	require.NotNil(t, e.Generation)
	assert.Equal(t, uint64(0), *e.Generation)

	cfg, err := a.cl.Get(context.Background())
	require.NoError(t, err)
	assert.Nil(t, cfg.Document)
	assert.Equal(t, uint64(0), cfg.Generation)
	assert.Equal(t, "initial", cfg.Source)
}

// PUT: 428 without If-Match, 400 with a malformed one, 412 with a stale
// one, 422 with the problems at their lines, each changing nothing; 200
// with the new ETag, and GET returns the document as given; the same
// document again is 200 with the same ETag.
func TestPutIsCompareAndSet(t *testing.T) {
	a := newAPI(t)
	unchanged := func(what string) {
		t.Helper()
		assert.Equal(t, uint64(0), a.ctl.Generation(), what)
		assert.False(t, a.srv.Admission().Enabled(), what)
		assert.Equal(t, server.DefaultCallsPerConnection, a.srv.CallCapacity().PerConnection, what)
	}

	r := a.do(http.MethodPut, "/v1/config", []byte(docConcurrency2))
	assert.Equal(t, http.StatusPreconditionRequired, r.code)
	assert.Contains(t, r.errBody(t).Error, `If-Match required`)
	unchanged("428")

	for _, bad := range []string{`0`, `W/"0"`, `"x"`, `""`, `*`, `"0", "1"`, `"-1"`} {
		r = a.put(docConcurrency2, bad)
		assert.Equal(t, http.StatusBadRequest, r.code, bad)
		assert.Contains(t, r.errBody(t).Error, "If-Match", bad)
	}
	unchanged("400")

	r = a.put(docConcurrency2, `"5"`)
	assert.Equal(t, http.StatusPreconditionFailed, r.code)
	e := r.errBody(t)
	require.NotNil(t, e.Expected)
	require.NotNil(t, e.Current)
	assert.Equal(t, []uint64{5, 0}, []uint64{*e.Expected, *e.Current})
	assert.Contains(t, e.Error, "derived from 5, the current one is 0")
	unchanged("412")

	r = a.put(`version: 1
server:
  admission:
    global:
      limits: [{kind: concurrency, limit: -2}]
  calls: {per_connection: 8, per_sever: 64}
`, `"0"`)
	assert.Equal(t, http.StatusUnprocessableEntity, r.code)
	e = r.errBody(t)
	require.Len(t, e.Problems, 2, "%s", r.body)
	byPath := map[string]admin.Problem{}
	for _, p := range e.Problems {
		byPath[p.Path] = p
	}
	assert.Equal(t, 6, byPath["server.calls.per_sever"].Line, "%+v", e.Problems)
	assert.NotZero(t, byPath["server.calls.per_sever"].Column)
	assert.NotEmpty(t, byPath["server.calls.per_sever"].Reason)
	unchanged("422")

	r = a.put(docConcurrency2, `"0"`)
	require.Equal(t, http.StatusOK, r.code, "%s", r.body)
	assert.Equal(t, `"1"`, r.header.Get("ETag"))
	var res admin.Result
	require.NoError(t, json.Unmarshal(r.body, &res))
	assert.Equal(t, uint64(1), res.Generation)
	assert.Equal(t, uint64(0), res.Previous)
	assert.False(t, res.Unchanged)
	assert.Equal(t, "admin", res.Source)
	assert.True(t, strings.HasPrefix(res.Origin, "127.0.0.1:"), res.Origin)
	assert.True(t, a.srv.Admission().Enabled())
	assert.Equal(t, 8, a.srv.CallCapacity().PerConnection)

	r = a.do(http.MethodGet, "/v1/config", nil)
	require.Equal(t, http.StatusOK, r.code)
	assert.Equal(t, docConcurrency2, string(r.body))
	assert.Equal(t, "application/yaml", r.header.Get("Content-Type"))
	assert.Equal(t, `"1"`, r.header.Get("ETag"))
	assert.Equal(t, "admin", r.header.Get("Sluice-Config-Source"))
	assert.Equal(t, res.Origin, r.header.Get("Sluice-Config-Origin"))
	assert.Equal(t, "1", r.header.Get("Sluice-Config-Generation"))

	// The same document (a comment aside): unchanged, same ETag.
	r = a.put("# again\n"+docConcurrency2, `"1"`)
	require.Equal(t, http.StatusOK, r.code, "%s", r.body)
	assert.Equal(t, `"1"`, r.header.Get("ETag"))
	require.NoError(t, json.Unmarshal(r.body, &res))
	assert.True(t, res.Unchanged)
	assert.Equal(t, uint64(1), a.ctl.Generation())

	// The ETag of before the PUT is stale now.
	r = a.put("version: 1\n", `"0"`)
	assert.Equal(t, http.StatusPreconditionFailed, r.code)
	assert.True(t, a.srv.Admission().Enabled())

	// A JSON document is served back as JSON.
	r = a.put(`{"version": 1, "server": {"calls": {"per_connection": 9}}}`, `"1"`)
	require.Equal(t, http.StatusOK, r.code, "%s", r.body)
	r = a.do(http.MethodGet, "/v1/config", nil)
	assert.Equal(t, "application/json", r.header.Get("Content-Type"))
	assert.Equal(t, `"2"`, r.header.Get("ETag"))
}

// A body beyond MaxBodyBytes is 413 and changes nothing.
func TestPutBodyTooLargeIs413(t *testing.T) {
	a := newAPI(t)
	big := docConcurrency2 + "#" + strings.Repeat("x", 64<<10) + "\n"
	for method, path := range map[string]string{http.MethodPut: "/v1/config", http.MethodPost: "/v1/config?dry_run=true"} {
		r := a.do(method, path, []byte(big), "If-Match", `"0"`)
		assert.Equal(t, http.StatusRequestEntityTooLarge, r.code, method)
		assert.Contains(t, r.errBody(t).Error, "exceeds 65536 bytes")
	}
	assert.Equal(t, uint64(0), a.ctl.Generation())
	assert.False(t, a.srv.Admission().Enabled())
}

// Two writers with the same ETag: exactly one wins, the other gets 412
// and nothing of its document is in force.
func TestTwoWritersWithTheSameETag(t *testing.T) {
	a := newAPI(t)
	require.Equal(t, http.StatusOK, a.put(docConcurrency2, `"0"`).code)
	docs := []string{
		"version: 1\nserver:\n  admission:\n    global:\n      limits: [{kind: concurrency, limit: 3}]\n  calls: {per_connection: 30}\n",
		"version: 1\nserver:\n  admission:\n    global:\n      limits: [{kind: concurrency, limit: 4}]\n  calls: {per_connection: 40}\n",
	}
	for round := 0; round < 20; round++ {
		gen := a.ctl.Generation()
		start := make(chan struct{})
		codes := make([]int, 2)
		var wg sync.WaitGroup
		for i := range docs {
			wg.Go(func() {
				<-start
				codes[i] = a.put(docs[i], etagOf(gen)).code
			})
		}
		close(start)
		wg.Wait()
		winner := -1
		for i, c := range codes {
			if c == http.StatusOK {
				require.Equal(t, -1, winner, "round %d: both won: %v", round, codes)
				winner = i
			} else {
				require.Equal(t, http.StatusPreconditionFailed, c, "round %d", round)
			}
		}
		require.NotEqual(t, -1, winner, "round %d: nobody won: %v", round, codes)
		require.Equal(t, gen+1, a.ctl.Generation())
		wantLimit, wantCalls := int64(3+winner), 30+10*winner
		st, ok := a.srv.Admission().Stats().Scope("global/concurrency")
		require.True(t, ok)
		require.Equal(t, wantLimit, st.Limit, "round %d", round)
		require.Equal(t, wantCalls, a.srv.CallCapacity().PerConnection, "round %d", round)
		require.Equal(t, docs[winner], string(a.ctl.Current().Document))
		// Back to a document both differ from (the winner's again would
		// be unchanged: 200 without a new generation).
		require.Equal(t, http.StatusOK, a.put(docConcurrency2, etagOf(gen+1)).code)
	}
}

func etagOf(gen uint64) string { return fmt.Sprintf(`"%d"`, gen) }

// The status reports the generation, the document's source and the last
// rejection with its problems, and the counts by source.
func TestStatusReportsRejectionsAndCounts(t *testing.T) {
	a := newAPI(t)
	st, err := a.cl.Status(context.Background())
	require.NoError(t, err)
	assert.Equal(t, "initial", st.Source)
	assert.False(t, st.HasDocument)
	assert.True(t, st.InSync)
	assert.Nil(t, st.LastRejection)

	require.Equal(t, http.StatusOK, a.put(docConcurrency2, `"0"`).code)
	require.Equal(t, http.StatusUnprocessableEntity, a.put("version: 1\nserver:\n  calls: {per_connection: -1}\n", `"1"`).code)
	require.Equal(t, http.StatusPreconditionFailed, a.put(docConcurrency2, `"0"`).code)
	require.Equal(t, http.StatusUnprocessableEntity, a.put("version: 1\nserver:\n  nope: 1\n", `"1"`).code)
	st, err = a.cl.Status(context.Background())
	require.NoError(t, err)
	assert.Equal(t, uint64(1), st.Generation)
	assert.Equal(t, uint64(1), st.ConfigGeneration)
	assert.True(t, st.InSync)
	assert.True(t, st.HasDocument)
	assert.Equal(t, "admin", st.Source)
	assert.False(t, st.AppliedAt.IsZero())
	require.NotNil(t, st.LastRejection)
	assert.Equal(t, "admin", st.LastRejection.Source)
	require.Len(t, st.LastRejection.Problems, 1)
	assert.Equal(t, admin.Problem{Path: "server.nope", Line: 3, Column: 3, Reason: st.LastRejection.Problems[0].Reason}, st.LastRejection.Problems[0])
	assert.Equal(t, map[string]admin.Counts{"admin": {Applied: 1, Rejected: 3}}, st.Counts)

	// A writer outside the Controller: out of sync.
	_, err = a.srv.Reconfigure(1, server.Settings{})
	require.NoError(t, err)
	st, err = a.cl.Status(context.Background())
	require.NoError(t, err)
	assert.Equal(t, uint64(2), st.Generation)
	assert.Equal(t, uint64(1), st.ConfigGeneration)
	assert.False(t, st.InSync)
}

// A query parameter a request does not take is a 400 before the request
// runs: PUT /v1/config?dry_run=true applied its document for real, an
// operator's "dry run" that changed the fleet. Only POST /v1/config takes
// one (dry_run).
func TestUnknownQueryParametersAreRefused(t *testing.T) {
	a := newAPI(t)
	r := a.do(http.MethodPut, "/v1/config?dry_run=true", []byte(docConcurrency2), "If-Match", `"0"`)
	assert.Equal(t, http.StatusBadRequest, r.code)
	assert.Contains(t, r.errBody(t).Error, "POST /v1/config?dry_run=true")
	assert.Equal(t, uint64(0), a.ctl.Generation(), "nothing applied")
	assert.False(t, a.srv.Admission().Enabled())

	for _, tc := range []struct{ method, path string }{
		{http.MethodGet, "/v1/config?verbose=1"},
		{http.MethodGet, "/v1/status?x"},
		{http.MethodDelete, "/v1/config/admission?force=true"},
		{http.MethodPost, "/v1/config?dry_run=true&apply=true"},
		{http.MethodGet, "/v1/status?%zz"},
	} {
		r := a.do(tc.method, tc.path, nil, "If-Match", `"0"`)
		assert.Equal(t, http.StatusBadRequest, r.code, "%s %s", tc.method, tc.path)
	}
	assert.Equal(t, uint64(0), a.ctl.Generation(), "nothing applied")
	r = a.do(http.MethodPost, "/v1/config?dry_run=true", []byte(docConcurrency2))
	assert.Equal(t, http.StatusOK, r.code, "%s", r.body)
}
