// Package stream runs the streaming comparison of issue 13 (make
// bench-compare's stream/ lines): server-streaming and bidirectional
// messages per second and MB/s at a given message size, for any System
// that implements the two shapes, measured the same way:
//
//   - server-streaming: one call asks for a burst of messages of the size
//     (the request carries the count and the size) and reads them all;
//     calls follow one another for the measured time;
//   - bidirectional: one call sends messages of the size while reading
//     the server's echo of each, the sender running ahead of the reader up
//     to the transport's flow control; calls follow one another.
//
// Every message read is checked for its size. This package holds the
// harness and grpc-go's system (raw codec, the fastest grpc-go can be);
// sluice's system joins it with sluice's streams.
package stream

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"time"
)

// Kind is a stream shape under test.
type Kind string

const (
	ServerStreaming Kind = "server"
	Bidi            Kind = "bidi"
)

// Streamer runs one call of each shape.
type Streamer interface {
	// Fill asks for n messages of size bytes and reads them; it returns
	// how many it read.
	Fill(ctx context.Context, n, size int) (int, error)
	// Echo sends n messages of body and reads their echoes; it returns
	// how many echoes it read.
	Echo(ctx context.Context, n int, body []byte) (int, error)
}

// System is one RPC stack: Start serves the streaming echo on a loopback
// listener and returns a Streamer for it and a stop function.
type System struct {
	Name  string
	Start func() (Streamer, func(), error)
}

// Result is one measured case.
type Result struct {
	System   string
	Kind     Kind
	Size     int
	Messages int64
	Elapsed  time.Duration
	// AllocsPerMessage is the process's heap allocations (client and
	// server sides together) per message moved, calls' own included.
	AllocsPerMessage float64
}

// MessagesPerSecond is the measured rate.
func (r Result) MessagesPerSecond() float64 { return float64(r.Messages) / r.Elapsed.Seconds() }

// MBPerSecond is the measured payload throughput (10^6 bytes per second).
func (r Result) MBPerSecond() float64 { return r.MessagesPerSecond() * float64(r.Size) / 1e6 }

// burst is how many messages one call moves: enough that the call's own
// cost is small beside them, few enough that a 64 KiB case ends calls
// within the window.
func burst(size int) int { return max(16, min(4096, (4<<20)/max(size, 1))) }

// Measure runs calls of kind on s for d after a warm-up of one call, and
// returns the messages moved in d.
func Measure(name string, s Streamer, kind Kind, size int, d time.Duration) (Result, error) {
	body := make([]byte, size)
	for i := range body {
		body[i] = byte('a' + i%26)
	}
	n := burst(size)
	call := func() (int, error) {
		ctx, cancel := context.WithTimeout(context.Background(), max(10*d, 30*time.Second))
		defer cancel()
		if kind == ServerStreaming {
			return s.Fill(ctx, n, size)
		}
		return s.Echo(ctx, n, body)
	}
	if _, err := call(); err != nil {
		return Result{}, fmt.Errorf("%s %s %d B: warm-up: %w", name, kind, size, err)
	}
	r := Result{System: name, Kind: kind, Size: size}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	for time.Since(start) < d {
		got, err := call()
		if err != nil {
			return Result{}, fmt.Errorf("%s %s %d B: %w", name, kind, size, err)
		}
		if got != n {
			return Result{}, fmt.Errorf("%s %s %d B: %d messages of %d", name, kind, size, got, n)
		}
		r.Messages += int64(got)
	}
	r.Elapsed = time.Since(start)
	runtime.ReadMemStats(&after)
	r.AllocsPerMessage = float64(after.Mallocs-before.Mallocs) / float64(max(r.Messages, 1))
	return r, nil
}

// fillRequest encodes a Fill request: the count and the size.
func fillRequest(n, size int) []byte {
	b := make([]byte, 16)
	binary.LittleEndian.PutUint64(b, uint64(n))
	binary.LittleEndian.PutUint64(b[8:], uint64(size))
	return b
}

// parseFill decodes a Fill request, bounding what it asks for.
func parseFill(b []byte) (n, size int, err error) {
	if len(b) != 16 {
		return 0, 0, errors.New("fill: the request is 16 bytes: count and size")
	}
	n, size = int(binary.LittleEndian.Uint64(b)), int(binary.LittleEndian.Uint64(b[8:]))
	if n < 0 || n > 1<<20 || size < 0 || size > 4<<20 {
		return 0, 0, fmt.Errorf("fill: %d messages of %d bytes is out of range", n, size)
	}
	return n, size, nil
}
