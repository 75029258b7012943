package admin_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"

	"github.com/sluicerpc/sluice/control"
	"github.com/sluicerpc/sluice/control/admin"
	"github.com/sluicerpc/sluice/server"
)

// The admin API serves a Controller over HTTP; its generation is the ETag,
// and every change names the generation it was derived from (If-Match).
// Client speaks the API: Get the configuration in force, Plan and Put a
// document derived from its generation. A Put from a generation that moved
// is refused with 412 and changes nothing.
func ExampleNewHandler() {
	mux := server.NewMux()
	mux.HandleRaw("echo", "Say", func(_ context.Context, req []byte) ([]byte, error) { return req, nil })
	srv, err := server.New(mux, server.Options{})
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	token := []byte("0123456789abcdef-example") // at least MinTokenLength bytes
	h, err := admin.NewHandler(control.New(srv, control.Options{}), admin.Options{Token: token})
	if err != nil {
		panic(err)
	}
	// In a program: admin.Listen (loopback by default) and admin.NewServer.
	ts := httptest.NewServer(h)
	defer ts.Close()
	hc := &http.Client{Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	c := &admin.Client{BaseURL: ts.URL, Token: token, HTTPClient: hc}
	ctx := context.Background()

	cfg, err := c.Get(ctx)
	if err != nil {
		panic(err)
	}
	fmt.Println(cfg.Generation, cfg.Source, cfg.Document == nil)

	doc := []byte("version: 1\nserver:\n  admission:\n    global:\n      limits: [{kind: concurrency, limit: 4}]\n")
	plan, err := c.Plan(ctx, doc, &cfg.Generation)
	if err != nil {
		panic(err)
	}
	fmt.Println(plan.Enable, plan.States[0].Action, plan.States[0].NewLimit)

	res, err := c.Put(ctx, doc, cfg.Generation)
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Previous, "->", res.Generation, res.Source)

	_, err = c.Put(ctx, doc, cfg.Generation) // the stale ETag
	var apiErr *admin.Error
	if errors.As(err, &apiErr) {
		fmt.Println(apiErr.StatusCode, *apiErr.Body.Expected, *apiErr.Body.Current)
	}
	// Output:
	// 0 initial true
	// true create 4
	// 0 -> 1 admin
	// 412 0 1
}
