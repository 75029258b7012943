package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/sluicerpc/sluice/control"
	"github.com/sluicerpc/sluice/control/admin"
	"github.com/sluicerpc/sluice/server"
)

// The network of the demo's admin API: loopback TCP, unless a test puts
// it on an in-memory network (onPipeNetwork). It is not the network of the
// demo's client and server (listen, dialer), so that a test that cuts
// those apart leaves the scenario's updates alone.
var (
	adminListen = func(addr string) (net.Listener, error) { return admin.Listen(addr, false) }
	// adminDial dials the admin API's address; nil dials TCP.
	adminDial func(ctx context.Context, addr string) (net.Conn, error)
)

// adminCallTimeout bounds one request of the demo to its admin API. A step
// is not interrupted by the demo's context once its request is sent: it is
// applied whole or refused whole, and the observer knows which.
const adminCallTimeout = 10 * time.Second

// demoAdmin is the demo's admin API: the Controller of the demo's server
// (the one writer of its configuration), the admin handler on a loopback
// port with a random token, and a client of it. Its methods are called by
// the scenario's goroutine only.
type demoAdmin struct {
	ctl    *control.Controller
	hs     *http.Server
	served chan error
	tr     *http.Transport
	cli    *admin.Client
	addr   string
	// gen is the generation in force, as the last answer said: the
	// If-Match of the next change.
	gen uint64
}

// startDemoAdmin serves the admin API of srv on 127.0.0.1 and reads the
// generation in force.
func startDemoAdmin(srv *server.Server) (*demoAdmin, error) {
	tok := make([]byte, 24)
	_, _ = rand.Read(tok) // never fails (crypto/rand)
	token := []byte(hex.EncodeToString(tok))
	a := &demoAdmin{ctl: control.New(srv, control.Options{}), served: make(chan error, 1)}
	h, err := admin.NewHandler(a.ctl, admin.Options{Token: token})
	if err != nil {
		return nil, err
	}
	l, err := adminListen("127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	a.addr = l.Addr().String()
	a.hs = admin.NewServer(h, nil)
	go func() { a.served <- a.hs.Serve(l) }()
	// The client dials the demo's own API only, over the demo's network.
	a.tr = &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		if adminDial != nil {
			return adminDial(ctx, a.addr)
		}
		var d net.Dialer
		return d.DialContext(ctx, "tcp", a.addr)
	}}
	a.cli = &admin.Client{BaseURL: "http://" + a.addr, Token: token, HTTPClient: &http.Client{Transport: a.tr}}

	ctx, cancel := context.WithTimeout(context.Background(), adminCallTimeout)
	defer cancel()
	cfg, err := a.cli.Get(ctx)
	if err != nil {
		a.stop()
		return nil, err
	}
	a.gen = cfg.Generation
	return a, nil
}

// stop shuts the API down and waits for it.
func (a *demoAdmin) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), adminStopTimeout)
	defer cancel()
	if err := a.hs.Shutdown(ctx); err != nil {
		_ = a.hs.Close()
	}
	<-a.served
	a.tr.CloseIdleConnections()
}

// plan is the dry run (POST /v1/config?dry_run=true) of putting doc
// derived from the generation in force.
func (a *demoAdmin) plan(doc []byte) (*admin.Plan, error) {
	ctx, cancel := context.WithTimeout(context.Background(), adminCallTimeout)
	defer cancel()
	gen := a.gen
	return a.cli.Plan(ctx, doc, &gen)
}

// put applies doc (PUT /v1/config, If-Match the generation in force) and
// returns the generation it published.
func (a *demoAdmin) put(doc []byte) (uint64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), adminCallTimeout)
	defer cancel()
	res, err := a.cli.Put(ctx, doc, a.gen)
	return a.answer("PUT /v1/config", res, err)
}

// disable disables admission (DELETE /v1/config/admission, If-Match the
// generation in force) and returns the generation it published.
func (a *demoAdmin) disable() (uint64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), adminCallTimeout)
	defer cancel()
	res, err := a.cli.DisableAdmission(ctx, a.gen)
	return a.answer("DELETE /v1/config/admission", res, err)
}

// answer checks that a change published one new generation derived from
// the one in force, and records it.
func (a *demoAdmin) answer(op string, res *admin.Result, err error) (uint64, error) {
	switch {
	case err != nil:
		return 0, fmt.Errorf("%s (If-Match %d): %w", op, a.gen, err)
	case res.Unchanged:
		return 0, fmt.Errorf("%s (If-Match %d): the document equals the one in force: nothing was published", op, a.gen)
	case res.Previous != a.gen || res.Generation <= a.gen:
		return 0, fmt.Errorf("%s (If-Match %d): the answer says generation %d derived from %d", op, a.gen, res.Generation, res.Previous)
	}
	a.gen = res.Generation
	return res.Generation, nil
}

// errNoPlan is returned for a plan that names no state: the demo's
// documents always bind the Global limit.
var errNoPlan = errors.New("the dry run planned no admission state")

// planLines describes a dry run in the timeline: one line per admission
// state (marks as in "sluice admin plan": ~ reconfigure, + create,
// - retire, = reuse, > handover) and one per queue change.
func planLines(p *admin.Plan) ([]string, error) {
	if len(p.States) == 0 && !p.Disable {
		return nil, errNoPlan
	}
	mode := "update"
	switch {
	case p.Disable:
		mode = "disable"
	case p.Enable:
		mode = "enable"
	}
	out := []string{fmt.Sprintf("dry run against generation %d (%s):", p.Generation, mode)}
	for _, s := range p.States {
		mark := planMarks[s.Action]
		if mark == "" {
			mark = "?"
		}
		limit := fmt.Sprintf("limit %d -> %d", s.OldLimit, s.NewLimit)
		switch s.Action {
		case "create":
			limit = fmt.Sprintf("limit %d", s.NewLimit)
		case "retire":
			limit = fmt.Sprintf("limit %d", s.OldLimit)
		case "reuse":
			limit = fmt.Sprintf("limit %d, unchanged", s.NewLimit)
		}
		out = append(out, fmt.Sprintf("  %s %s (%s): %s, in use %d, waiting %d: %s", mark, s.Name, s.Action, limit, s.InUse, s.Waiters, s.Effect))
	}
	for _, q := range p.Queue {
		out = append(out, "  queue: "+q)
	}
	return out, nil
}
