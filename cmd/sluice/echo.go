package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/protocol/status"
	"github.com/sluicerpc/sluice/server"
)

// The echo service of "sluice serve" and the demo:
//
//	echo/Say      answers its request body
//	echo/Sleep    sleeps for the duration in its body (8 bytes, little-endian
//	              nanoseconds, at most maxSleep) or until the call ends, then
//	              answers the body
//	echo/Repeat   server-streaming: the request is a count (0..1000), then
//	              optionally a space and a body (at most 64 KiB), as "3 hi";
//	              it sends the body that many times and ends with the
//	              trailer echo-messages=count; any other request is refused
//	              with InvalidArgument
//	echo/Collect  client-streaming: answers the concatenation of the
//	              client's messages, with the header echo-messages=their
//	              number; past 1 MiB in all it refuses with ResourceExhausted
//	echo/Chat     bidirectional: sends each message back as it arrives, and
//	              ends with the trailer echo-messages=their number
//
// echo_stream.go has the streaming methods and their bounds.
const (
	echoService = "echo"
	echoSay     = "Say"
	echoSleep   = "Sleep"
	maxSleep    = time.Minute
)

// sleepBody encodes d for echo/Sleep.
func sleepBody(d time.Duration) []byte {
	return binary.LittleEndian.AppendUint64(nil, uint64(d))
}

// echoMux returns the echo service; onSleep, when not nil, is called as
// echo/Sleep starts and ends (the demo counts its holders with it).
func echoMux(onSleep func(ctx context.Context, entering bool)) *server.Mux {
	mux := server.NewMux()
	mux.HandleRaw(echoService, echoSay, func(_ context.Context, req []byte) ([]byte, error) { return req, nil })
	handleEchoStreams(mux)
	mux.HandleRaw(echoService, echoSleep, func(ctx context.Context, req []byte) ([]byte, error) {
		if len(req) != 8 {
			return nil, status.Errorf(protocol.CodeInvalidArgument, "echo/Sleep wants 8 bytes of nanoseconds, got %d bytes", len(req))
		}
		d := time.Duration(binary.LittleEndian.Uint64(req))
		if d < 0 || d > maxSleep {
			return nil, status.New(protocol.CodeInvalidArgument, fmt.Sprintf("echo/Sleep takes 0..%v, got %v", maxSleep, d))
		}
		if onSleep != nil {
			onSleep(ctx, true)
			defer onSleep(ctx, false)
		}
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
			return req, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	})
	return mux
}
