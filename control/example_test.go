package control_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/sluicerpc/sluice/config"
	"github.com/sluicerpc/sluice/control"
	"github.com/sluicerpc/sluice/kernel"
	"github.com/sluicerpc/sluice/server"
)

// A Controller owns a server's runtime configuration: every document
// applied, whatever brought it, is one Reconfigure. Plan is the dry run of
// the same change; a change derived from a generation that moved is
// refused and changes nothing.
func Example() {
	mux := server.NewMux()
	mux.HandleRaw("echo", "Say", func(_ context.Context, req []byte) ([]byte, error) { return req, nil })
	srv, err := server.New(mux, server.Options{})
	if err != nil {
		panic(err)
	}
	defer srv.Close()

	ctl := control.New(srv, control.Options{})
	a, err := ctl.Apply(control.Change{Source: control.SourceAPI, Origin: "example", Expected: ctl.Generation(), Document: []byte(`version: 1
server:
  admission:
    global:
      limits: [{kind: concurrency, limit: 2}]
`)})
	fmt.Println(a.Generation, err, srv.Admission().Enabled())

	next := control.Change{Source: control.SourceAPI, Origin: "example", Expected: a.Generation, Document: []byte(`version: 1
server:
  admission:
    global:
      limits: [{kind: concurrency, limit: 5}]
  calls: {per_connection: 8}
`)}
	plan, err := ctl.Plan(next)
	if err != nil {
		panic(err)
	}
	st := plan.Admission.States[0]
	fmt.Println(st.Action, st.NewLimit, plan.Changes[0].Field, plan.Changes[0].New)

	b, err := ctl.Apply(next)
	fmt.Println(b.Generation, err, srv.CallCapacity().PerConnection)

	_, err = ctl.Apply(next) // derived from generation 1, which moved
	fmt.Println(errors.Is(err, kernel.ErrPublicationConflict))

	// An invalid document changes nothing and names its problems.
	_, err = ctl.Apply(control.Change{Source: control.SourceAPI, Expected: b.Generation, Name: "bad.yaml", Document: []byte("version: 1\nserver: {calls: {per_connection: -1}}\n")})
	var cerr *config.Error
	fmt.Println(errors.As(err, &cerr), ctl.Generation())
	fmt.Println(err)
	// Output:
	// 1 <nil> true
	// reconfigure 5 Calls.PerConnection 8
	// 2 <nil> 8
	// true
	// true 2
	// config: bad.yaml:2:34: server.calls.per_connection: must not be negative, got -1
}
