package client_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"time"

	"github.com/sluicerpc/sluice/client"
	"github.com/sluicerpc/sluice/message"
	"github.com/sluicerpc/sluice/server"
)

type sample struct {
	Value int `json:"value"`
}

type summary struct {
	Count int `json:"count"`
	Total int `json:"total"`
}

// exampleServe serves mux on a loopback listener and dials it; stop
// closes both.
func exampleServe(mux *server.Mux) (c *client.Client, stop func(), err error) {
	srv, err := server.New(mux, server.Options{})
	if err != nil {
		return nil, nil, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	c, err = client.Dial(ctx, []string{l.Addr().String()}, client.Options{})
	if err != nil {
		_ = srv.Close()
		<-served
		return nil, nil, err
	}
	return c, func() { _ = c.Close(); _ = srv.Close(); <-served }, nil
}

func ExampleNewBidiStream() {
	// A typed bidirectional method: one greeting per name, as they come.
	mux := server.NewMux()
	server.HandleBidiStream(mux, "greeter", "Chat", message.JSON[helloReq](), message.JSON[helloResp](),
		func(_ context.Context, s *server.BidiStream[helloReq, helloResp]) error {
			for {
				r, err := s.Receive()
				if errors.Is(err, io.EOF) {
					return nil // the client half-closed: End, status OK
				}
				if err != nil {
					return err
				}
				if err := s.Send(&helloResp{Text: "hello, " + r.Name}); err != nil {
					return err
				}
			}
		})
	c, stop, err := exampleServe(mux)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stop()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := client.NewBidiStream(ctx, c, "greeter/Chat", message.JSON[helloReq](), message.JSON[helloResp]())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	for _, name := range []string{"ada", "alan"} {
		if err := s.Send(&helloReq{Name: name}); err != nil {
			fmt.Println(err)
			return
		}
		resp, err := s.Receive()
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(resp.Text)
	}
	if err := s.CloseSend(); err != nil {
		fmt.Println(err)
		return
	}
	_, err = s.Receive()
	fmt.Println(errors.Is(err, io.EOF))
	// Output:
	// hello, ada
	// hello, alan
	// true
}

func ExampleNewServerStream() {
	// A typed server-streaming method: the first n samples.
	mux := server.NewMux()
	server.HandleServerStream(mux, "samples", "First", message.JSON[summary](), message.JSON[sample](),
		func(_ context.Context, req *summary, s *server.ServerStream[sample]) error {
			for i := range req.Count {
				if err := s.Send(&sample{Value: i * i}); err != nil {
					return err
				}
			}
			return nil
		})
	c, stop, err := exampleServe(mux)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stop()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := client.NewServerStream(ctx, c, "samples/First", &summary{Count: 4}, message.JSON[summary](), message.JSON[sample]())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	for {
		m, err := s.Receive()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Print(m.Value, " ")
	}
	fmt.Println()
	// Output: 0 1 4 9
}

func ExampleNewClientStream() {
	// A typed client-streaming method: the count and total of the samples.
	mux := server.NewMux()
	server.HandleClientStream(mux, "samples", "Sum", message.JSON[sample](), message.JSON[summary](),
		func(_ context.Context, s *server.ClientStream[sample]) (*summary, error) {
			var sum summary
			for {
				m, err := s.Receive()
				if errors.Is(err, io.EOF) {
					return &sum, nil
				}
				if err != nil {
					return nil, err
				}
				sum.Count++
				sum.Total += m.Value
			}
		})
	c, stop, err := exampleServe(mux)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stop()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := client.NewClientStream(ctx, c, "samples/Sum", message.JSON[sample](), message.JSON[summary]())
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, v := range []int{3, 5, 8} {
		if err := s.Send(&sample{Value: v}); err != nil {
			fmt.Println(err)
			return
		}
	}
	sum, err := s.CloseAndReceive() // the stream has ended and released everything
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(sum.Count, sum.Total)
	// Output: 3 16
}

func ExampleClient_NewStream() {
	// A raw server stream: the server sends its request back, upper-cased
	// and then lower-cased, with a trailer.
	mux := server.NewMux()
	mux.HandleServerStream("text", "Cases", func(ctx context.Context, req []byte, s *server.Stream) error {
		if err := s.Send(bytes.ToUpper(req)); err != nil {
			return err
		}
		if err := s.Send(bytes.ToLower(req)); err != nil {
			return err
		}
		return server.AddResponseMetadata(ctx, "count", "2") // after the first Send: a trailer
	})
	c, stop, err := exampleServe(mux)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer stop()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := c.NewStream(ctx, "text/Cases", client.StreamServer)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	if err := s.Send([]byte("Sluice")); err != nil { // the one request; opens the call
		fmt.Println(err)
		return
	}
	for {
		msg, err := s.Receive() // valid until the next Receive
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(string(msg))
	}
	n, _ := s.Trailer().Get("count")
	fmt.Println("count:", string(n))
	// Output:
	// SLUICE
	// sluice
	// count: 2
}
