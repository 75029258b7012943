package admin_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/control/admin"
)

const planBefore = `version: 1
server:
  admission:
    global:
      limits:
        - {kind: concurrency, limit: 2}
        - {kind: token_bucket, token_limit: 100, tokens_per_period: 10, period: 1s}
    methods:
      "echo/Sleep":
        limits: [{kind: concurrency, limit: 1}]
  calls: {per_connection: 8, per_server: 64}
`

// Every action: global concurrency resized, the global rate's kind
// replaced, echo/Say's state created, echo/Sleep's retired; a queue bound
// and two other settings changed.
const planAfter = `version: 1
server:
  admission:
    global:
      limits:
        - {kind: concurrency, limit: 5}
        - {kind: fixed_window, limit: 50, window: 1s}
    methods:
      "echo/Say":
        limits: [{kind: concurrency, limit: 3}]
    queue: {max_queued_calls: 4, max_queued_bytes: 1MiB, max_queue_delay: 100ms}
  calls: {per_connection: 16, per_server: 64}
  streams: {window: 128KiB}
`

// The dry run changes nothing, and the PUT with its ETag then does what
// it said: every state's action, kind and new limit, and every other
// setting's new value, as the kernel's stats and the server's getters
// report them afterwards.
func TestDryRunPlanIsWhatThePutDoes(t *testing.T) {
	a := newAPI(t)
	require.Equal(t, http.StatusOK, a.put(planBefore, `"0"`).code)
	statsBefore := a.srv.Admission().Stats()

	r := a.do(http.MethodPost, "/v1/config?dry_run=true", []byte(planAfter))
	require.Equal(t, http.StatusOK, r.code, "%s", r.body)
	assert.Equal(t, `"1"`, r.header.Get("ETag"), "computed against the current generation")
	var p admin.Plan
	require.NoError(t, json.Unmarshal(r.body, &p))
	assert.Equal(t, uint64(1), p.Generation)
	assert.False(t, p.Enable)
	assert.False(t, p.Disable)

	// Nothing changed.
	assert.Equal(t, uint64(1), a.ctl.Generation())
	assert.Equal(t, statsBefore, a.srv.Admission().Stats())
	assert.Equal(t, 8, a.srv.CallCapacity().PerConnection)
	assert.Equal(t, planBefore, string(a.ctl.Current().Document))

	actions := map[string]admin.StatePlan{}
	for _, s := range p.States {
		actions[s.Name] = s
	}
	byAction := map[string][]string{}
	for _, s := range p.States {
		byAction[s.Action] = append(byAction[s.Action], s.Name)
	}
	assert.Equal(t, map[string][]string{
		"reconfigure": {"global/concurrency"},
		"handover":    {"global/rate"},
		"create":      {"method:echo/Say/concurrency"},
		"retire":      {"method:echo/Sleep/concurrency"},
	}, byAction, "%s", r.body)
	gc := actions["global/concurrency"]
	assert.Equal(t, []int64{2, 5}, []int64{gc.OldLimit, gc.NewLimit})
	assert.Equal(t, "concurrency", gc.Class)
	assert.NotEmpty(t, gc.Effect)
	assert.Equal(t, "tokenbucket", actions["global/rate"].OldKind, "%+v", actions["global/rate"])
	assert.NotEmpty(t, p.Queue)
	fields := map[string]admin.SettingChange{}
	for _, c := range p.Changes {
		fields[c.Field] = c
	}
	require.Contains(t, fields, "Calls.PerConnection")
	assert.Equal(t, admin.SettingChange{Field: "Calls.PerConnection", Old: "8", New: "16", Effect: fields["Calls.PerConnection"].Effect}, fields["Calls.PerConnection"])
	require.Contains(t, fields, "StreamWindow")
	assert.Len(t, p.Changes, 2, "%+v", p.Changes)

	// Apply exactly what was planned.
	r = a.put(planAfter, r.header.Get("ETag"))
	require.Equal(t, http.StatusOK, r.code, "%s", r.body)
	st := a.srv.Admission().Stats()
	for _, s := range p.States {
		got, ok := st.Scope(s.Name)
		if s.Action == "retire" {
			assert.False(t, ok, "%s retired, idle: dropped", s.Name)
			continue
		}
		require.True(t, ok, s.Name)
		assert.Equal(t, s.Kind, got.Kind, s.Name)
		assert.Equal(t, s.NewLimit, got.Limit, s.Name)
	}
	assert.Equal(t, len(p.States)-1, st.States, "no state the plan did not name")
	getters := map[string]string{
		"Calls.PerConnection": fmt.Sprint(a.srv.CallCapacity().PerConnection),
		"StreamWindow":        fmt.Sprint(a.srv.StreamWindow()),
	}
	for _, c := range p.Changes {
		assert.Equal(t, c.New, getters[c.Field], c.Field)
	}
}

// The dry run's errors are the PUT's: 412 with a stale If-Match, 422 for
// an invalid document; a POST without dry_run=true is 400. A plan with
// If-Match is computed against it.
func TestDryRunErrors(t *testing.T) {
	a := newAPI(t)
	require.Equal(t, http.StatusOK, a.put(planBefore, `"0"`).code)
	r := a.do(http.MethodPost, "/v1/config?dry_run=true", []byte(planAfter), "If-Match", `"0"`)
	assert.Equal(t, http.StatusPreconditionFailed, r.code)
	r.errBody(t)
	r = a.do(http.MethodPost, "/v1/config?dry_run=true", []byte("version: 1\nserver:\n  admission:\n    methods:\n      \"echo/Nope\": {limits: [{kind: concurrency, limit: 1}]}\n"))
	assert.Equal(t, http.StatusUnprocessableEntity, r.code)
	e := r.errBody(t)
	require.Len(t, e.Problems, 1, "%s", r.body)
	assert.Equal(t, 5, e.Problems[0].Line, "%+v", e.Problems)
	r = a.do(http.MethodPost, "/v1/config?dry_run=true", []byte(planAfter), "If-Match", "1")
	assert.Equal(t, http.StatusBadRequest, r.code)
	for _, q := range []string{"", "?dry_run=false", "?dry_run=maybe"} {
		r = a.do(http.MethodPost, "/v1/config"+q, []byte(planAfter), "If-Match", `"1"`)
		assert.Equal(t, http.StatusBadRequest, r.code, q)
		assert.Contains(t, r.errBody(t).Error, "dry_run=true")
	}
	assert.Equal(t, uint64(1), a.ctl.Generation())

	gen := uint64(1)
	p, err := a.cl.Plan(context.Background(), []byte("version: 1\n"), &gen)
	require.NoError(t, err)
	assert.True(t, p.Disable)
	assert.Equal(t, uint64(1), p.Generation)
	assert.Equal(t, uint64(1), a.ctl.Generation())
}

// TestAMergeCycleIsA422: the document of issue 26 whose merge key refers
// to its own mapping ended the process in the dry run and the PUT (a stack
// overflow in config's decoder). Both answer 422 with the problem at the
// alias, and nothing changes.
func TestAMergeCycleIsA422(t *testing.T) {
	a := newAPI(t)
	const cycle = "version: 1\nserver: &s\n  <<: *s\n"
	for _, r := range []response{
		a.do(http.MethodPost, "/v1/config?dry_run=true", []byte(cycle)),
		a.put(cycle, `"0"`),
	} {
		assert.Equal(t, http.StatusUnprocessableEntity, r.code)
		e := r.errBody(t)
		require.Len(t, e.Problems, 1, "%s", r.body)
		assert.Equal(t, 3, e.Problems[0].Line, "%+v", e.Problems)
		assert.Contains(t, e.Problems[0].Reason, "a cycle")
	}
	assert.Equal(t, uint64(0), a.ctl.Generation())
}
