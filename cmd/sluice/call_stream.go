package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/sluicerpc/sluice/client"
	"github.com/sluicerpc/sluice/protocol"
)

// streamKinds are the values of "sluice call -stream": none (a unary or
// one-way call) and the three stream shapes.
var streamKinds = map[string]client.StreamType{
	"none":   0,
	"server": client.StreamServer,
	"client": client.StreamClient,
	"bidi":   client.StreamBidi,
}

// sendsMany reports whether a stream of kind sends several messages (a
// server-streaming call sends exactly one).
func sendsMany(kind client.StreamType) bool {
	return kind == client.StreamClient || kind == client.StreamBidi
}

// dataFlag is "sluice call -data": given once, the request body (or a
// stream's one message); given several times, the messages of a client or
// bidi stream, in order. The first -data on the command line replaces the
// default.
type dataFlag struct {
	vals []string
	set  bool
}

func (d *dataFlag) String() string {
	if d == nil {
		return ""
	}
	return strings.Join(d.vals, " ")
}

func (d *dataFlag) Set(v string) error {
	if !d.set {
		d.vals, d.set = nil, true
	}
	d.vals = append(d.vals, v)
	return nil
}

// streamResult is how one stream of "sluice call -stream" ended: err is
// nil for status OK (the server's End).
type streamResult struct {
	sent, received int
	header         *protocol.Metadata // nil when no server frame arrived
	trailer        *protocol.Metadata
	err            error
}

// stream makes one streaming call of method: it sends the -data messages
// (-count times over for a client or bidi stream, then half-closes) while
// it receives, calling onMessage, when not nil, for each message received
// in order, until the stream ends. ctx bounds the whole stream. A Send that
// fails on this side (not because the server ended the stream) cancels the
// stream and is the result's error.
func (o callOptions) stream(ctx context.Context, c *client.Client, kind client.StreamType, method string, onMessage func([]byte)) streamResult {
	s, err := c.NewStream(ctx, method, kind)
	if err != nil {
		return streamResult{err: err}
	}
	defer func() { _ = s.Close() }()
	var (
		r        streamResult
		sendErr  error
		sendDone = make(chan struct{})
	)
	if kind == client.StreamServer {
		if err := s.Send([]byte(o.Data.vals[0])); err != nil {
			return streamResult{err: err} // not opened: nothing to receive
		}
		r.sent = 1
		close(sendDone)
	} else {
		go func() {
			defer close(sendDone)
			for range o.Count {
				for _, d := range o.Data.vals {
					if err := s.Send([]byte(d)); err != nil {
						if !errors.Is(err, io.EOF) { // io.EOF: the server ended it; Receive says how
							sendErr = err
							_ = s.Close()
						}
						return
					}
					r.sent++
				}
			}
			if err := s.CloseSend(); err != nil {
				sendErr = err
				_ = s.Close()
			}
		}()
	}
	for {
		msg, err := s.Receive()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				r.err = err
			}
			break
		}
		r.received++
		if onMessage != nil {
			onMessage(msg)
		}
	}
	<-sendDone // the end closed the send windows: a blocked Send has returned
	if sendErr != nil {
		r.err = sendErr
	}
	if h, err := s.Header(); err == nil {
		r.header = h
	}
	r.trailer = s.Trailer()
	return r
}

// print writes how the stream ended, each line after prefix: the message
// counts and the status ("stream (1 sent, 3 received): OK", or the error),
// then its headers and trailers, one line each, values quoted
// ("trailer echo-messages: \"3\"").
func (r streamResult) print(w io.Writer, prefix string) {
	end := "OK"
	if r.err != nil {
		end = r.err.Error()
	}
	fmt.Fprintf(w, "%sstream (%d sent, %d received): %s\n", prefix, r.sent, r.received, end)
	printMetadata(w, prefix+"header", r.header)
	printMetadata(w, prefix+"trailer", r.trailer)
}

func printMetadata(w io.Writer, what string, md *protocol.Metadata) {
	if md == nil {
		return
	}
	for i := range md.Len() {
		k, v := md.At(i)
		fmt.Fprintf(w, "%s %s: %q\n", what, k, v)
	}
}
