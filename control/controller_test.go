package control_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/codecs"
	"github.com/sluicerpc/sluice/config"
	"github.com/sluicerpc/sluice/control"
	"github.com/sluicerpc/sluice/kernel"
	"github.com/sluicerpc/sluice/limiters/concurrency"
	"github.com/sluicerpc/sluice/server"
	"github.com/sluicerpc/sluice/spi"
)

// A document becomes one Reconfigure: every part it sets is in force and
// the generation moved once.
func TestApplySetsEveryPartInOneGeneration(t *testing.T) {
	srv := newServer(t)
	c := control.New(srv, control.Options{})
	assert.Nil(t, c.Current().Document)
	a, err := c.Apply(latest(`version: 1
server:
  admission:
    global:
      limits: [{kind: concurrency, limit: 2}]
  calls: {per_connection: 8, per_server: 64}
  connections: {max_connections: 100, max_handshakes: 10, max_handshakes_per_address: 2}
  governor: {decodes: 3, retained_bytes: 1MiB, decoded_bytes: 2MiB, stream_bytes: 512KiB}
  compression: {codecs: [zstd], max_decoded_size: 8MiB}
  streams: {window: 128KiB}
`))
	require.NoError(t, err)
	assert.Equal(t, uint64(1), a.Generation)
	assert.Equal(t, uint64(1), srv.Admission().Generation())
	assert.True(t, srv.Admission().Enabled())
	assert.Equal(t, server.CallCapacity{PerConnection: 8, PerServer: 64}, srv.CallCapacity())
	assert.Equal(t, server.ConnectionLimits{MaxConnections: 100, MaxHandshakes: 10, MaxHandshakesPerAddress: 2}, srv.ConnectionLimits())
	gl := srv.GovernorLimits()
	assert.Equal(t, []int64{3, 1 << 20, 2 << 20, 512 << 10}, []int64{gl.Decodes, gl.RetainedBytes, gl.DecodedBytes, gl.StreamBytes})
	comp := srv.Compression()
	require.Len(t, comp.Codecs, 1)
	assert.Equal(t, "zstd", comp.Codecs[0].Name())
	assert.Equal(t, 8<<20, comp.MaxDecodedSize)
	assert.Equal(t, 128<<10, srv.StreamWindow())
	assert.Equal(t, control.SourceFile, a.Source)

	// Removing the sections restores the defaults and disables admission,
	// in one more generation.
	a, err = c.Apply(latest("version: 1\n"))
	require.NoError(t, err)
	assert.Equal(t, uint64(2), a.Generation)
	assert.False(t, srv.Admission().Enabled())
	assert.Equal(t, server.CallCapacity{PerConnection: server.DefaultCallsPerConnection, PerServer: server.DefaultCallsPerServer}, srv.CallCapacity())
	assert.Equal(t, codecs.Config{}, srv.Compression())
	// Disabled -> disabled with another part changed is a generation too.
	a, err = c.Apply(latest("version: 1\nserver: {calls: {per_connection: 9}}\n"))
	require.NoError(t, err)
	assert.Equal(t, uint64(3), a.Generation)
	assert.Equal(t, 9, srv.CallCapacity().PerConnection)
}

// The same document again publishes nothing.
func TestApplyOfTheDocumentInForceIsUnchanged(t *testing.T) {
	srv := newServer(t)
	c := control.New(srv, control.Options{})
	a, err := c.Apply(latest(docConcurrency2))
	require.NoError(t, err)
	b, err := c.Apply(latest("# a comment changes nothing\n" + docConcurrency2))
	require.NoError(t, err)
	assert.True(t, b.Unchanged)
	assert.Equal(t, a.Generation, b.Generation)
	assert.Equal(t, a.Generation, srv.Admission().Generation())
	assert.Equal(t, control.Counts{Applied: 1, Unchanged: 1}, c.Status().Counts[control.SourceFile])
}

// Every kind of bad document changes nothing and says why, with the
// document's paths and lines, the kernel's verdicts included.
func TestInvalidDocumentsChangeNothing(t *testing.T) {
	srv := newServer(t)
	c := control.New(srv, control.Options{})
	good, err := c.Apply(latest(docConcurrency2))
	require.NoError(t, err)
	for name, tc := range map[string]struct{ doc, want string }{
		"syntax":         {"version: 1\nserver: [\n", "sluice.yaml:"},
		"unknown field":  {"version: 1\nserver:\n  calls: {per_conection: 3}\n", `sluice.yaml:3:`},
		"wrong type":     {"version: 1\nserver:\n  calls: {per_connection: three}\n", "server.calls.per_connection"},
		"bad duration":   {"version: 1\nserver:\n  admission:\n    global: {limits: [{kind: concurrency, limit: 1}]}\n    queue: {max_queued_calls: 1, max_queued_bytes: 1, max_queue_delay: 3 parsecs}\n", "max_queue_delay"},
		"unknown method": {"version: 1\nserver:\n  admission:\n    methods:\n      echo/Nope: {limits: [{kind: concurrency, limit: 1}]}\n", `sluice.yaml:5:`},
		"empty":          {"", "version"},
		"bad selector":   {"version: 1\nserver:\n  admission:\n    partition: {selector: tenant, max_partitions: 1, idle_timeout: 1s, limits: [{kind: concurrency, limit: 1}]}\n", "unknown selector"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := c.Apply(latest(tc.doc))
			require.Error(t, err)
			var ce *config.Error
			require.True(t, errors.As(err, &ce), "%T %v", err, err)
			assert.Contains(t, err.Error(), tc.want)
			cur := c.Current()
			assert.Equal(t, good.Generation, cur.Generation)
			assert.Equal(t, good.Generation, srv.Admission().Generation(), "nothing published")
			assert.Equal(t, 8, srv.CallCapacity().PerConnection, "nothing set")
			rej := c.Status().LastRejection
			require.NotNil(t, rej)
			assert.Equal(t, err, rej.Err)
		})
	}
}

// A change derived from a generation that moved is refused; a Latest one
// is planned again from the new generation when a writer outside the
// Controller published.
func TestStaleChangesAreRefusedAndLatestOnesRetried(t *testing.T) {
	srv := newServer(t)
	c := control.New(srv, control.Options{})
	a, err := c.Apply(latest(docConcurrency2))
	require.NoError(t, err)

	admin := control.Change{Source: control.SourceAdmin, Document: []byte("version: 1\n"), Expected: a.Generation - 1}
	_, err = c.Apply(admin)
	var pc *kernel.PublicationConflictError
	require.ErrorAs(t, err, &pc)
	assert.Equal(t, kernel.PublicationConflictError{Expected: a.Generation - 1, Current: a.Generation}, *pc)
	assert.True(t, srv.Admission().Enabled(), "the stale change changed nothing")

	// A writer outside the Controller.
	_, err = srv.Admission().Update(a.Generation, kernel.Options{Global: kernel.Rule{}})
	require.Error(t, err)
	g, err := srv.Admission().Disable()
	require.NoError(t, err)
	b, err := c.Apply(latest(docConcurrency2))
	require.NoError(t, err)
	assert.False(t, b.Unchanged, "the document in force was changed behind the controller's back: apply it again")
	assert.Equal(t, g+1, b.Generation)
	assert.True(t, srv.Admission().Enabled())
}

func TestPlanMatchesTheApply(t *testing.T) {
	srv := newServer(t)
	c := control.New(srv, control.Options{})
	a, err := c.Apply(latest(docConcurrency2))
	require.NoError(t, err)
	next := control.Change{Source: control.SourceAdmin, Expected: a.Generation, Document: []byte(`version: 1
server:
  admission:
    global:
      limits: [{kind: concurrency, limit: 5}]
  calls: {per_connection: 4, per_server: 64}
`)}
	p, err := c.Plan(next)
	require.NoError(t, err)
	assert.Equal(t, a.Generation, srv.Admission().Generation(), "a plan publishes nothing")
	assert.Equal(t, 8, srv.CallCapacity().PerConnection, "a plan sets nothing")
	require.Len(t, p.Admission.States, 1)
	assert.Equal(t, kernel.PlanReconfigure, p.Admission.States[0].Action)
	assert.Equal(t, int64(5), p.Admission.States[0].NewLimit)
	require.Len(t, p.Changes, 1)
	assert.Equal(t, server.SettingChange{Field: "Calls.PerConnection", Old: "8", New: "4",
		Effect: "calls in flight finish; new calls are refused (call_capacity) until a connection has fewer than 4; connections connected before keep the value of their handshake as a hint"}, p.Changes[0])

	_, err = c.Apply(next)
	require.NoError(t, err)
	assert.Equal(t, 4, srv.CallCapacity().PerConnection)
	for _, sc := range srv.Admission().Stats().Scopes {
		if sc.Name == "global/concurrency" {
			assert.Equal(t, int64(5), sc.Limit)
		}
	}

	stale := next
	_, err = c.Plan(stale)
	require.ErrorIs(t, err, kernel.ErrPublicationConflict, "the plan of a stale change is refused as its Apply would be")
}

// Two admin writers with the same expected generation: exactly one
// document is in force, the other is refused and left no trace.
func TestTwoWritersFromOneGenerationOneWins(t *testing.T) {
	srv := newServer(t)
	c := control.New(srv, control.Options{})
	a, err := c.Apply(latest(docConcurrency2))
	require.NoError(t, err)
	for i := range 50 {
		gen := c.Current().Generation
		// Both differ from the document in force (an unchanged
		// document is no write, and wins nothing).
		docs := [2]string{
			fmt.Sprintf("version: 1\nserver: {calls: {per_connection: 3, per_server: %d}}\n", 100+i),
			fmt.Sprintf("version: 1\nserver: {admission: {global: {limits: [{kind: concurrency, limit: 9}]}}, calls: {per_connection: 4, per_server: %d}}\n", 100+i),
		}
		errs := make(chan error, 2)
		for w := range 2 {
			go func() {
				_, err := c.Apply(control.Change{Source: control.SourceAdmin, Expected: gen, Document: []byte(docs[w])})
				errs <- err
			}()
		}
		e1, e2 := <-errs, <-errs
		require.True(t, (e1 == nil) != (e2 == nil), "round %d: exactly one wins: %v, %v", i, e1, e2)
		for _, e := range []error{e1, e2} {
			if e != nil {
				require.ErrorIs(t, e, kernel.ErrPublicationConflict)
			}
		}
		cur := c.Current()
		require.Equal(t, gen+1, cur.Generation)
		if srv.CallCapacity().PerConnection == 3 {
			require.Equal(t, docs[0], string(cur.Document))
			require.False(t, srv.Admission().Enabled(), "nothing of the loser's document")
		} else {
			require.Equal(t, docs[1], string(cur.Document))
			require.Equal(t, 4, srv.CallCapacity().PerConnection)
			require.True(t, srv.Admission().Enabled())
		}
	}
	assert.Equal(t, uint64(50), c.Status().Counts[control.SourceAdmin].Rejected)
	_ = a
}

// Generation is the server's generation, also when a writer outside the
// Controller published: then Current lags behind it.
func TestGenerationIsTheServersGeneration(t *testing.T) {
	srv := newServer(t)
	c := control.New(srv, control.Options{})
	_, err := c.Apply(latest(docConcurrency2))
	require.NoError(t, err)
	assert.Equal(t, uint64(1), c.Generation())
	_, err = srv.Reconfigure(1, server.Settings{})
	require.NoError(t, err)
	assert.Equal(t, uint64(2), c.Generation())
	assert.Equal(t, uint64(1), c.Current().Generation)
}

// A server built with its admission and no document: DisableAdmission
// turns admission off and keeps every other setting exactly.
func TestDisableAdmissionWithoutADocument(t *testing.T) {
	mux := server.NewMux()
	mux.HandleRaw("echo", "Say", func(_ context.Context, req []byte) ([]byte, error) { return req, nil })
	srv, err := server.New(mux, server.Options{
		Admission:   &kernel.Options{Global: kernel.Rule{Limits: []spi.Spec{concurrency.Spec(3)}}},
		Calls:       server.CallCapacity{PerConnection: 7},
		Compression: codecs.Config{Off: true},
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	c := control.New(srv, control.Options{})
	before := []any{srv.CallCapacity(), srv.ConnectionLimits(), srv.GovernorLimits(), srv.Compression(), srv.StreamWindow()}

	_, err = c.DisableAdmission(control.SourceAdmin, "test", 0)
	require.ErrorIs(t, err, kernel.ErrPublicationConflict)
	assert.True(t, srv.Admission().Enabled())

	a, err := c.DisableAdmission(control.SourceAdmin, "test", 1)
	require.NoError(t, err)
	assert.Equal(t, uint64(2), a.Generation)
	assert.False(t, srv.Admission().Enabled())
	assert.Equal(t, before, []any{srv.CallCapacity(), srv.ConnectionLimits(), srv.GovernorLimits(), srv.Compression(), srv.StreamWindow()})
	assert.Nil(t, a.Document)

	a, err = c.DisableAdmission(control.SourceAdmin, "test", 2)
	require.NoError(t, err)
	assert.True(t, a.Unchanged)
	assert.Equal(t, uint64(2), srv.Admission().Generation())

	_, err = c.Apply(latest(docConcurrency2))
	require.NoError(t, err)
	_, err = c.DisableAdmission(control.SourceAdmin, "test", 3)
	require.ErrorIs(t, err, control.ErrDocumentInForce)
	assert.True(t, srv.Admission().Enabled())
}

// racingKind is the built-in concurrency kind whose New, which the kernel
// calls while it prepares a candidate (outside its locks), runs onNew
// first: a writer outside the Controller publishes right then.
type racingKind struct {
	spi.LimiterKind
	onNew func()
}

func (k *racingKind) New(p spi.Params, now time.Time) (spi.Limiter, error) {
	if f := k.onNew; f != nil {
		k.onNew = nil
		f()
	}
	return k.LimiterKind.New(p, now)
}

// A Latest change that loses the race with a writer outside the
// Controller (it publishes between the Controller's read of the
// generation and its publication) is planned again from the new
// generation, and then applied in full; an admin change in the same spot
// is refused (it was derived from a generation that is gone).
func TestALatestChangeThatLosesARaceIsPlannedAgain(t *testing.T) {
	base, err := spi.DefaultRegistry.Lookup(concurrency.KindName)
	require.NoError(t, err)
	kind := &racingKind{LimiterKind: base}
	var reg spi.Registry
	reg.MustRegister(kind)
	mux := server.NewMux()
	mux.HandleRaw("echo", "Say", func(_ context.Context, req []byte) ([]byte, error) { return req, nil })
	srv, err := server.New(mux, server.Options{Registry: &reg})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	c := control.New(srv, control.Options{})

	// The outside writer publishes to the kernel directly (the server's
	// Reconfigure, which the Controller is inside, is serialized with it).
	outside := func() {
		_, err := srv.Admission().Publish(srv.Admission().Generation(), nil)
		require.NoError(t, err)
	}
	kind.onNew = outside
	a, err := c.Apply(latest(docConcurrency2))
	require.NoError(t, err)
	assert.Equal(t, uint64(2), a.Generation, "the outside writer's generation 1, then the document's")
	assert.Equal(t, 8, srv.CallCapacity().PerConnection, "the document in full")
	assert.True(t, srv.Admission().Enabled(), "over the outside writer's change")
	assert.Equal(t, uint64(1), c.Status().Counts[control.SourceFile].Retried)

	kind.onNew = outside
	_, err = c.Apply(control.Change{Source: control.SourceAdmin, Expected: a.Generation, Document: []byte(strings.Replace(docConcurrency2, "limit: 2", "limit: 3", 1))})
	require.ErrorIs(t, err, kernel.ErrPublicationConflict)
	assert.False(t, srv.Admission().Enabled(), "the admin change lost, and left the outside writer's change alone")
	assert.Equal(t, a.Generation+1, srv.Admission().Generation())
}

// An etcd revision equal to the file in force publishes nothing, and the
// configuration in force reports it: the server runs that revision.
func TestAnUnchangedChangeBecomesTheReportedSource(t *testing.T) {
	srv := newServer(t)
	c := control.New(srv, control.Options{})
	a, err := c.Apply(latest(docConcurrency2))
	require.NoError(t, err)
	etcd := control.Change{Source: control.SourceEtcd, Origin: "/sluice/config@7", Revision: 7, Name: "/sluice/config", Document: []byte("# from etcd\n" + docConcurrency2), Latest: true}
	b, err := c.Apply(etcd)
	require.NoError(t, err)
	assert.True(t, b.Unchanged)
	assert.Equal(t, a.Generation, b.Generation)
	cur := c.Current()
	assert.Equal(t, control.SourceEtcd, cur.Source)
	assert.Equal(t, int64(7), cur.Revision)
	assert.Equal(t, etcd.Document, cur.Document)
	assert.Equal(t, a.Generation, srv.Admission().Generation())
}

// Server is the server the Controller was made for.
func TestServerIsTheControllersServer(t *testing.T) {
	srv := newServer(t)
	require.Same(t, srv, control.New(srv, control.Options{}).Server())
}
