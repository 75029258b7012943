package client_test

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/sluicerpc/sluice/client"
	"github.com/sluicerpc/sluice/message"
	"github.com/sluicerpc/sluice/server"
)

type helloReq struct {
	Name string `json:"name"`
}

type helloResp struct {
	Text string `json:"text"`
}

func Example() {
	// A server with one typed method.
	mux := server.NewMux()
	server.Handle(mux, "greeter", "Hello", message.JSON[helloReq](), message.JSON[helloResp](),
		func(_ context.Context, r *helloReq) (*helloResp, error) {
			return &helloResp{Text: "hello, " + r.Name}, nil
		})
	srv, _ := server.New(mux, server.Options{})
	l, _ := net.Listen("tcp", "127.0.0.1:0")
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	defer func() { _ = srv.Close(); <-served }()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err := client.Dial(ctx, []string{l.Addr().String()}, client.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer c.Close()

	resp, err := client.Call(ctx, c, "greeter/Hello", &helloReq{Name: "sluice"},
		message.JSON[helloReq](), message.JSON[helloResp]())
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(resp.Text)
	// Output: hello, sluice
}
