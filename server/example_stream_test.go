package server_test

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/sluicerpc/sluice/message"
	"github.com/sluicerpc/sluice/server"
)

// The types of the examples' messages, encoded with message.JSON.
type (
	tailRequest struct {
		From int `json:"from"`
	}
	logLine struct {
		N    int    `json:"n"`
		Text string `json:"text"`
	}
	uploadResult struct {
		Lines int `json:"lines"`
	}
	chatMessage struct {
		Text string `json:"text"`
	}
)

// A server-streaming method: the client's one request, then any number of
// responses. Headers go with the first message, trailers with the End.
// (The client's side: client.NewServerStream.)
func ExampleHandleServerStream() {
	mux := server.NewMux()
	server.HandleServerStream(mux, "logs", "Tail", message.JSON[tailRequest](), message.JSON[logLine](),
		func(ctx context.Context, req *tailRequest, s *server.ServerStream[logLine]) error {
			if err := server.AddResponseMetadata(ctx, "log-version", "3"); err != nil {
				return err
			}
			for n := req.From; n < req.From+10; n++ {
				// Send blocks while the client's window is full, bounded
				// by ctx; an error means the stream is over: return it.
				if err := s.Send(&logLine{N: n, Text: "..."}); err != nil {
					return err
				}
			}
			return server.AddResponseMetadata(ctx, "log-end", time.Now().UTC().Format(time.RFC3339))
		})
}

// A client-streaming method: messages until the client's half-close
// (io.EOF), then the one response. A message that does not decode fails
// the call with InvalidArgument whatever the handler then returns.
// (The client's side: client.NewClientStream.)
func ExampleHandleClientStream() {
	mux := server.NewMux()
	server.HandleClientStream(mux, "logs", "Upload", message.JSON[logLine](), message.JSON[uploadResult](),
		func(_ context.Context, s *server.ClientStream[logLine]) (*uploadResult, error) {
			var res uploadResult
			for {
				_, err := s.Receive()
				if errors.Is(err, io.EOF) {
					return &res, nil
				}
				if err != nil {
					return nil, err
				}
				res.Lines++
			}
		})
}

// A bidirectional method: receive and send in any order, here an echo
// that ends with status OK at the client's half-close. (The client's
// side: client.NewBidiStream.)
func ExampleHandleBidiStream() {
	mux := server.NewMux()
	server.HandleBidiStream(mux, "chat", "Echo", message.JSON[chatMessage](), message.JSON[chatMessage](),
		func(_ context.Context, s *server.BidiStream[chatMessage, chatMessage]) error {
			for {
				m, err := s.Receive()
				if errors.Is(err, io.EOF) {
					return nil
				}
				if err != nil {
					return err
				}
				if err := s.Send(m); err != nil { // m is the handler's own: it may be sent back
					return err
				}
			}
		})
}

// A raw bidirectional method: each message is echoed as it arrives. The
// message Receive returns is valid until the next Receive, and Send copies
// it out before it returns, so the echo needs no buffer of its own. Receive
// returns io.EOF once the client half-closed; returning nil ends the
// stream with status OK. (The client's side: client.Client.NewStream.)
func ExampleMux_HandleBidiStream() {
	mux := server.NewMux()
	mux.HandleBidiStream("echo", "Chat", func(_ context.Context, s *server.Stream) error {
		for {
			msg, err := s.Receive()
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return err // the call ended (Cancel, deadline, Stop): nothing more to do
			}
			if err := s.Send(msg); err != nil {
				return err
			}
		}
	})
	_, _ = server.New(mux, server.Options{StreamWindow: 1 << 20}) // a 1 MiB window per running stream
}
