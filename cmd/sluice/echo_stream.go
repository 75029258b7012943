package main

import (
	"context"
	"errors"
	"io"
	"strconv"

	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/protocol/status"
	"github.com/sluicerpc/sluice/server"
)

// The streaming methods of the echo service (echo.go lists them all).
// Each is bounded whatever the client sends: Repeat by the count and body
// it accepts, Collect by the bytes it keeps, Chat by holding one message
// at a time (the stream's window bounds what waits).
const (
	echoRepeat  = "Repeat"
	echoCollect = "Collect"
	echoChat    = "Chat"

	// maxRepeat and maxRepeatBody bound echo/Repeat's request: at most
	// maxRepeat copies of a body of at most maxRepeatBody bytes (64 MiB
	// sent in all at the most).
	maxRepeat     = 1000
	maxRepeatBody = 64 << 10
	// maxCollect bounds the bytes echo/Collect keeps: the client's
	// messages together, its answer.
	maxCollect = 1 << 20

	// echoMessagesKey is the metadata entry with the number of messages
	// a streaming echo method sent (Repeat) or received (Collect, Chat).
	echoMessagesKey = "echo-messages"
)

// parseRepeat parses echo/Repeat's request: a decimal count (digits only,
// 0..maxRepeat), then optionally a space and the body to repeat ("3 hi":
// "hi" three times; "3": three empty messages). body aliases req.
func parseRepeat(req []byte) (count int, body []byte, err error) {
	digits := 0
	for digits < len(req) && req[digits] >= '0' && req[digits] <= '9' {
		digits++
	}
	rest := req[digits:]
	if digits == 0 || digits > 4 || (len(rest) > 0 && rest[0] != ' ') {
		return 0, nil, status.Errorf(protocol.CodeInvalidArgument, "echo/Repeat wants a count of 0..%d, then a space and the body (%q), got %q", maxRepeat, "3 hi", clip(req))
	}
	count, _ = strconv.Atoi(string(req[:digits])) // at most 4 digits: cannot fail
	if count > maxRepeat {
		return 0, nil, status.Errorf(protocol.CodeInvalidArgument, "echo/Repeat sends at most %d copies, got a count of %d", maxRepeat, count)
	}
	if len(rest) > 0 {
		body = rest[1:]
	}
	if len(body) > maxRepeatBody {
		return 0, nil, status.Errorf(protocol.CodeInvalidArgument, "echo/Repeat repeats at most %d bytes, got %d", maxRepeatBody, len(body))
	}
	return count, body, nil
}

// clip shortens b for an error message.
func clip(b []byte) []byte {
	if len(b) > 32 {
		return append(b[:32:32], "..."...)
	}
	return b
}

// repeat is echo/Repeat (server-streaming): it sends its request's body
// as many times as the request says, then the trailer echo-messages with
// that count.
func repeat(ctx context.Context, req []byte, s *server.Stream) error {
	count, body, err := parseRepeat(req)
	if err != nil {
		return err
	}
	for range count {
		if err := s.Send(body); err != nil {
			return err
		}
	}
	return server.AddResponseMetadata(ctx, echoMessagesKey, strconv.Itoa(count))
}

// collect is echo/Collect (client-streaming): it answers the
// concatenation of the client's messages, with the header echo-messages
// saying how many there were. Over maxCollect bytes in all it refuses the
// stream with ResourceExhausted as soon as the message that passes the
// bound arrives, having kept at most maxCollect bytes.
func collect(ctx context.Context, s *server.Stream) ([]byte, error) {
	var all []byte
	n := 0
	for {
		msg, err := s.Receive()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		if len(msg) > maxCollect-len(all) {
			return nil, status.Errorf(protocol.CodeResourceExhausted, "echo/Collect keeps at most %d bytes: message %d (%d bytes) would make %d", maxCollect, n+1, len(msg), len(all)+len(msg))
		}
		all = append(all, msg...)
		n++
	}
	if err := server.AddResponseMetadata(ctx, echoMessagesKey, strconv.Itoa(n)); err != nil {
		return nil, err
	}
	return all, nil
}

// chat is echo/Chat (bidirectional): it sends each message back as it
// arrives, before receiving the next, and after the client's half-close
// ends with the trailer echo-messages saying how many it echoed.
func chat(ctx context.Context, s *server.Stream) error {
	n := 0
	for {
		msg, err := s.Receive()
		if errors.Is(err, io.EOF) {
			return server.AddResponseMetadata(ctx, echoMessagesKey, strconv.Itoa(n))
		}
		if err != nil {
			return err
		}
		if err := s.Send(msg); err != nil { // msg is valid until the next Receive
			return err
		}
		n++
	}
}

// handleEchoStreams registers the streaming echo methods on mux.
func handleEchoStreams(mux *server.Mux) {
	mux.HandleServerStream(echoService, echoRepeat, repeat)
	mux.HandleClientStream(echoService, echoCollect, collect)
	mux.HandleBidiStream(echoService, echoChat, chat)
}
