package client_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/sluicerpc/sluice/client"
	"github.com/sluicerpc/sluice/kernel"
	"github.com/sluicerpc/sluice/kernel/governor"
	"github.com/sluicerpc/sluice/limiters/concurrency"
	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/protocol/status"
	"github.com/sluicerpc/sluice/server"
	"github.com/sluicerpc/sluice/spi"
)

// The interleaving model (issue 13, item 6): a real server and a real
// client over TCP loopback run a few concurrent streams of random shapes,
// each driven by a random script for both ends, under admission (two
// streams run at a time, two wait, more are refused), a small call
// capacity and a small pre-admission stream byte budget. What each side
// observed is checked against what the scripts allow, and after every
// stream ended both sides must hold nothing.

// Client ends of the sending side.
const (
	sendCloseSend = iota // CloseSend after the last Send
	sendLeaveOpen        // nothing: the stream stays open for sending
	sendClose            // Close after the last Send
	sendCancel           // cancel the stream's context after the last Send
)

// Handler ends.
const (
	handlerOK    = iota // return nil (client-streaming: the response)
	handlerError        // return modelError(stream)
	handlerPanic        // panic
	handlerHold         // wait for the context (only with a deadline)
)

// hStep is one step of a handler's script: a Receive, or a Send of size
// bytes.
type hStep struct {
	Recv bool
	Size int
}

// modelStream is one stream's script, for both ends.
type modelStream struct {
	Kind           client.StreamType
	Sends          []int         // the client's messages (StreamServer: exactly one, the request)
	SendEnd        int           // send*
	RecvStop       int           // -1: receive until the end; k >= 0: end locally after k messages
	RecvStopCancel bool          // that local end cancels the context instead of Close
	Steps          []hStep       // the handler's, in order
	HEnd           int           // handler*
	Resp           int           // StreamClient: the size of the response
	Deadline       time.Duration // 0: none; else the stream's context times out after it
	Compress       bool
}

func (m modelStream) String() string {
	return fmt.Sprintf("{%v sends=%v sendEnd=%d recvStop=%d/cancel=%v handler=%v hend=%d resp=%d deadline=%v compress=%v}",
		m.Kind, m.Sends, m.SendEnd, m.RecvStop, m.RecvStopCancel, m.Steps, m.HEnd, m.Resp, m.Deadline, m.Compress)
}

func (m modelStream) handlerSends() int {
	if m.Kind == client.StreamClient {
		if m.HEnd == handlerOK {
			return 1 // the response
		}
		return 0
	}
	n := 0
	for _, s := range m.Steps {
		if !s.Recv {
			n++
		}
	}
	return n
}

func (m modelStream) handlerRecvs() int {
	n := 0
	for _, s := range m.Steps {
		if s.Recv {
			n++
		}
	}
	return n
}

var modelSizes = rapid.SampledFrom([]int{0, 1, 5, 100, 1000, 3000, 20_000, protocol.InitialStreamWindow, 70_000, 140_000})

// drawStream draws one stream's script. The scripts are coupled only as
// far as needed to keep the application itself from deadlocking (a
// handler waiting for a message the client never sends, while the client
// waits for an answer): a handler that holds needs a deadline, and a
// client that leaves the stream open sends at least as many messages as
// the handler receives unless a deadline ends it.
func drawStream(t *rapid.T, i int) modelStream {
	l := func(s string) string { return fmt.Sprintf("s%d.%s", i, s) }
	var m modelStream
	m.Kind = rapid.SampledFrom([]client.StreamType{client.StreamBidi, client.StreamBidi, client.StreamServer, client.StreamClient}).Draw(t, l("kind"))
	if rapid.IntRange(0, 5).Draw(t, l("deadline?")) == 0 {
		m.Deadline = time.Duration(rapid.IntRange(1, 40).Draw(t, l("deadlineMs"))) * time.Millisecond
	}
	m.Compress = rapid.Bool().Draw(t, l("compress"))
	m.RecvStop = -1
	if rapid.IntRange(0, 3).Draw(t, l("recvStop?")) == 0 {
		m.RecvStop = rapid.IntRange(0, 3).Draw(t, l("recvStop"))
		m.RecvStopCancel = rapid.Bool().Draw(t, l("recvStopCancel"))
	}
	ends := []int{handlerOK, handlerOK, handlerError, handlerPanic}
	if m.Deadline > 0 {
		ends = append(ends, handlerHold, handlerHold)
	}
	m.HEnd = rapid.SampledFrom(ends).Draw(t, l("hend"))
	switch m.Kind {
	case client.StreamServer:
		m.Sends = []int{modelSizes.Draw(t, l("req"))}
		m.SendEnd = sendCloseSend // the one Send half-closes
		for range rapid.IntRange(0, 6).Draw(t, l("hsends")) {
			m.Steps = append(m.Steps, hStep{Size: modelSizes.Draw(t, l("hsend"))})
		}
		return m
	case client.StreamClient:
		m.Resp = modelSizes.Draw(t, l("resp"))
	}
	m.Sends = rapid.SliceOfN(modelSizes, 0, 6).Draw(t, l("sends"))
	m.SendEnd = rapid.IntRange(sendCloseSend, sendCancel).Draw(t, l("sendEnd"))
	for range rapid.IntRange(0, 8).Draw(t, l("hsteps")) {
		if m.Kind == client.StreamClient || rapid.Bool().Draw(t, l("hrecv?")) {
			m.Steps = append(m.Steps, hStep{Recv: true})
		} else {
			m.Steps = append(m.Steps, hStep{Size: modelSizes.Draw(t, l("hsend"))})
		}
	}
	if m.SendEnd == sendLeaveOpen && m.Deadline == 0 {
		// Keep only as many Receives as the client sends.
		kept, recvs := m.Steps[:0], 0
		for _, s := range m.Steps {
			if s.Recv {
				if recvs == len(m.Sends) {
					continue
				}
				recvs++
			}
			kept = append(kept, s)
		}
		m.Steps = kept
	}
	return m
}

// modelBody is message idx of stream st in direction dir (0: from the
// client), size bytes: every message of a case has distinct contents
// (but for the empty ones), so a message delivered twice, out of order or
// to the wrong stream does not compare equal. Compressible ones repeat a
// byte after an 8-byte tag; the others are pseudo-random.
func modelBody(st, dir, idx, size int, compressible bool) []byte {
	seed := uint64(st)<<40 | uint64(dir)<<32 | uint64(idx)
	b := make([]byte, size)
	x := seed*0x9e3779b97f4a7c15 + 1
	for j := range b {
		switch {
		case j < 8:
			b[j] = byte(seed >> (8 * j))
		case compressible:
			b[j] = byte(idx)
		default:
			if j%8 == 0 {
				x ^= x << 13
				x ^= x >> 7
				x ^= x << 17
			}
			b[j] = byte(x >> (8 * (j % 8)))
		}
	}
	if size > 0 {
		b[0] ^= byte(st*31 + dir*7 + idx) // short messages differ too
	}
	return b
}

// modelError is the error handler st returns with handlerError.
func modelError(st int) error {
	codes := []protocol.Code{protocol.CodeAborted, protocol.CodeNotFound, protocol.CodeOutOfRange}
	return status.Errorf(codes[st%len(codes)], "model: stream %d fails", st)
}

// streamObs is what both ends of one stream observed.
type streamObs struct {
	mu       sync.Mutex
	problems []string

	// The client's side.
	openErr      error
	sentOK       int
	sendErr      error
	closeSent    bool
	closeSendErr error
	local        bool // the client ended the stream (Close, cancel) or its deadline is set
	explicit     bool // the client ended the stream (Close, cancel)
	got          int
	end          error // Receive's first error
	endAgain     error // the next Receive's
	localAtEnd   bool  // local was set when Receive returned end

	// The handler's side.
	runs      int
	hGot      int
	hEOF      bool
	hSent     int
	hStepErr  error
	hFinished bool // reached its end (return, panic, hold)
}

func (o *streamObs) problem(format string, args ...any) {
	o.mu.Lock()
	o.problems = append(o.problems, fmt.Sprintf(format, args...))
	o.mu.Unlock()
}

// modelCase is one rapid case: the scripts and the observations.
type modelCase struct {
	streams      []modelStream
	obs          []*streamObs
	probeEntered chan struct{} // probe/Hold runs
}

func (mc *modelCase) script() string {
	var b strings.Builder
	for i, s := range mc.streams {
		fmt.Fprintf(&b, "\n  stream %d: %v", i, s)
	}
	return b.String()
}

// modelMux serves model/Bidi, model/Server and model/Client, which run the
// handler script of the stream named by the request metadata
// "model-stream", and probe/Hold, which waits for its context without
// receiving.
func modelMux(mc *modelCase) *server.Mux {
	mux := server.NewMux()
	lookup := func(ctx context.Context) (int, modelStream, *streamObs) {
		v, _ := server.RequestMetadata(ctx).Get("model-stream")
		i, err := strconv.Atoi(v)
		if err != nil || i < 0 || i >= len(mc.streams) {
			panic("model: a stream without its metadata")
		}
		o := mc.obs[i]
		o.mu.Lock()
		o.runs++
		o.mu.Unlock()
		return i, mc.streams[i], o
	}
	mux.HandleBidiStream("model", "Bidi", func(ctx context.Context, s *server.Stream) error {
		i, m, o := lookup(ctx)
		if err := runHandlerSteps(ctx, i, m, o, s); err != nil {
			return err
		}
		return handlerEnd(ctx, i, m, o)
	})
	mux.HandleServerStream("model", "Server", func(ctx context.Context, req []byte, s *server.Stream) error {
		i, m, o := lookup(ctx)
		if want := modelBody(i, 0, 0, m.Sends[0], m.Compress); !bytes.Equal(req, want) {
			o.problem("handler: the request is %d bytes, not the %d bytes sent (or its content differs)", len(req), len(want))
		}
		o.mu.Lock()
		o.hGot = 1
		o.mu.Unlock()
		if err := runHandlerSteps(ctx, i, m, o, s); err != nil {
			return err
		}
		return handlerEnd(ctx, i, m, o)
	})
	mux.HandleClientStream("model", "Client", func(ctx context.Context, s *server.Stream) ([]byte, error) {
		i, m, o := lookup(ctx)
		if err := runHandlerSteps(ctx, i, m, o, s); err != nil {
			return nil, err
		}
		if err := handlerEnd(ctx, i, m, o); err != nil {
			return nil, err
		}
		o.mu.Lock()
		o.hSent = 1 // the response goes with the handler's return
		o.mu.Unlock()
		return modelBody(i, 1, 0, m.Resp, m.Compress), nil
	})
	mux.HandleBidiStream("probe", "Hold", func(ctx context.Context, _ *server.Stream) error {
		mc.probeEntered <- struct{}{}
		<-ctx.Done()
		return ctx.Err()
	})
	return mux
}

// runHandlerSteps runs the handler's Receives and Sends, checking each
// message received; it returns the error of a step that failed.
func runHandlerSteps(ctx context.Context, i int, m modelStream, o *streamObs, s *server.Stream) error {
	for _, st := range m.Steps {
		if st.Recv {
			b, err := s.Receive()
			switch {
			case errors.Is(err, io.EOF):
				o.mu.Lock()
				o.hEOF = true
				o.mu.Unlock()
				continue // every later Receive is EOF too
			case err != nil:
				o.mu.Lock()
				o.hStepErr = err
				o.mu.Unlock()
				return err
			}
			o.mu.Lock()
			idx := o.hGot
			o.hGot++
			o.mu.Unlock()
			if idx >= len(m.Sends) {
				o.problem("handler: received message %d, the client sends %d", idx, len(m.Sends))
				continue
			}
			if want := modelBody(i, 0, idx, m.Sends[idx], m.Compress); !bytes.Equal(b, want) {
				o.problem("handler: message %d is %d bytes, not the %d bytes sent (or its content differs)", idx, len(b), len(want))
			}
			continue
		}
		o.mu.Lock()
		idx := o.hSent
		o.mu.Unlock()
		if err := s.Send(modelBody(i, 1, idx, st.Size, m.Compress)); err != nil {
			o.mu.Lock()
			o.hStepErr = err
			o.mu.Unlock()
			return err
		}
		o.mu.Lock()
		o.hSent++
		o.mu.Unlock()
	}
	return nil
}

// handlerEnd carries out the handler's end, but for the client-streaming
// response.
func handlerEnd(ctx context.Context, i int, m modelStream, o *streamObs) error {
	o.mu.Lock()
	o.hFinished = true
	o.mu.Unlock()
	switch m.HEnd {
	case handlerError:
		return modelError(i)
	case handlerPanic:
		panic(fmt.Sprintf("model: stream %d panics", i))
	case handlerHold:
		<-ctx.Done()
		return ctx.Err()
	}
	return nil
}

// runClient runs stream i's client script to its end.
func runClient(c *client.Client, i int, m modelStream, o *streamObs) {
	ctx, cancel := context.WithCancel(context.Background())
	if m.Deadline > 0 {
		o.local = true // the deadline is the client's own end, at any moment
		ctx, cancel = context.WithTimeout(context.Background(), m.Deadline)
	}
	defer cancel()
	method := map[client.StreamType]string{client.StreamBidi: "model/Bidi", client.StreamServer: "model/Server", client.StreamClient: "model/Client"}[m.Kind]
	opts := []client.CallOption{client.WithMetadata("model-stream", strconv.Itoa(i))}
	if !m.Compress {
		opts = append(opts, client.NoCompression())
	}
	s, err := c.NewStream(ctx, method, m.Kind, opts...)
	if err != nil {
		o.mu.Lock()
		o.openErr = err
		o.mu.Unlock()
		return
	}
	defer s.Close()
	endLocally := func(cancelCtx bool) {
		o.mu.Lock()
		o.local, o.explicit = true, true
		o.mu.Unlock()
		if cancelCtx {
			cancel()
		} else {
			_ = s.Close()
		}
	}
	sent := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // the sender
		defer wg.Done()
		defer close(sent)
		for idx, size := range m.Sends {
			if err := s.Send(modelBody(i, 0, idx, size, m.Compress)); err != nil {
				o.mu.Lock()
				o.sendErr = err
				o.mu.Unlock()
				return
			}
			o.mu.Lock()
			o.sentOK++
			o.mu.Unlock()
		}
		if m.Kind == client.StreamServer {
			return
		}
		switch m.SendEnd {
		case sendCloseSend:
			o.mu.Lock()
			o.closeSent = true
			o.mu.Unlock()
			if err := s.CloseSend(); err != nil {
				o.mu.Lock()
				o.closeSendErr = err
				o.mu.Unlock()
			}
		case sendClose:
			endLocally(false)
		case sendCancel:
			endLocally(true)
		}
	}()
	go func() { // the receiver
		defer wg.Done()
		if m.Kind == client.StreamServer {
			<-sent // a server stream is opened by its Send
		}
		for {
			if m.RecvStop >= 0 {
				o.mu.Lock()
				stop := o.got == m.RecvStop && !o.local
				o.mu.Unlock()
				if stop {
					endLocally(m.RecvStopCancel)
				}
			}
			b, err := s.Receive()
			if err != nil {
				_, again := s.Receive()
				o.mu.Lock()
				o.end, o.endAgain, o.localAtEnd = err, again, o.explicit
				o.mu.Unlock()
				return
			}
			o.mu.Lock()
			idx := o.got
			o.got++
			o.mu.Unlock()
			if want := modelBody(i, 1, idx, respSize(m, idx), m.Compress); !bytes.Equal(b, want) {
				o.problem("client: message %d is %d bytes, not the %d bytes the handler sent (or its content differs)", idx, len(b), len(want))
			}
		}
	}()
	wg.Wait()
}

// respSize is the size of the handler's message idx (-1: none).
func respSize(m modelStream, idx int) int {
	if m.Kind == client.StreamClient {
		if idx == 0 {
			return m.Resp
		}
		return -1
	}
	n := 0
	for _, s := range m.Steps {
		if s.Recv {
			continue
		}
		if n == idx {
			return s.Size
		}
		n++
	}
	return -1
}

// modelCode is the status of a stream's end: OK for io.EOF, the context's
// errors as their codes.
func modelCode(err error) protocol.Code {
	switch {
	case err == nil, errors.Is(err, io.EOF):
		return protocol.CodeOK
	case errors.Is(err, context.Canceled):
		return protocol.CodeCanceled
	case errors.Is(err, context.DeadlineExceeded):
		return protocol.CodeDeadlineExceeded
	}
	return status.Code(err)
}

// checkStream checks stream i's observations against its script.
func (mc *modelCase) checkStream(i int) []string {
	m, o := mc.streams[i], mc.obs[i]
	o.mu.Lock()
	defer o.mu.Unlock()
	p := append([]string(nil), o.problems...)
	bad := func(format string, args ...any) { p = append(p, fmt.Sprintf(format, args...)) }
	if o.runs > 1 {
		bad("the handler ran %d times", o.runs)
	}
	if o.openErr != nil {
		if m.Deadline == 0 || modelCode(o.openErr) != protocol.CodeDeadlineExceeded {
			bad("NewStream failed: %v", o.openErr)
		}
		if o.runs != 0 {
			bad("NewStream failed, yet the handler ran")
		}
		return p
	}
	if o.end == nil {
		bad("Receive never returned an error")
		return p
	}
	endCode := modelCode(o.end)
	if modelCode(o.endAgain) != endCode || o.endAgain.Error() != o.end.Error() {
		bad("the end is not stable: Receive returned %v, then %v", o.end, o.endAgain)
	}
	// The ends the scripts allow.
	localCodes := map[protocol.Code]bool{
		protocol.CodeCanceled:         o.localAtEnd,
		protocol.CodeDeadlineExceeded: m.Deadline > 0,
	}
	serverEnd := false // the end is the server's, as the handler script says
	switch {
	case localCodes[endCode]:
	case o.runs == 0:
		if endCode != protocol.CodeResourceExhausted {
			bad("the handler never ran and the stream ended with %v", o.end)
		}
	case !o.hFinished:
		bad("the handler stopped at a failed step (%v) and the client saw %v", o.hStepErr, o.end)
	case m.HEnd == handlerOK:
		serverEnd = endCode == protocol.CodeOK
		if !serverEnd {
			bad("the handler returned OK and the client saw %v", o.end)
		}
	case m.HEnd == handlerError:
		serverEnd = o.end.Error() == modelError(i).Error() && endCode == status.Code(modelError(i))
		if !serverEnd {
			bad("the handler returned %v and the client saw %v", modelError(i), o.end)
		}
	case m.HEnd == handlerPanic:
		serverEnd = endCode == protocol.CodeInternal
		if !serverEnd {
			bad("the handler panicked and the client saw %v", o.end)
		}
	default:
		bad("the handler held and the client saw %v", o.end)
	}
	if o.got > o.hSent {
		bad("the client received %d messages, the handler sent %d", o.got, o.hSent)
	}
	if o.hGot > o.sentOK && m.Kind != client.StreamServer {
		bad("the handler received %d messages, the client sent %d", o.hGot, o.sentOK)
	}
	if serverEnd && !o.localAtEnd && o.got != o.hSent {
		bad("the server ended the stream after %d messages, the client received %d before its end", o.hSent, o.got)
	}
	if o.runs == 1 && !o.local && !o.hFinished {
		bad("nothing ended the stream from the client, yet a handler step failed: %v", o.hStepErr)
	}
	if o.runs == 1 && !o.local && o.hFinished && o.hSent != m.handlerSends() {
		bad("the handler finished with %d of its %d messages sent", o.hSent, m.handlerSends())
	}
	if o.hEOF && (!o.closeSent && m.Kind != client.StreamServer || o.hGot != len(m.Sends)) {
		bad("the handler saw the half-close after %d of %d messages (CloseSend called: %v)", o.hGot, len(m.Sends), o.closeSent)
	}
	if o.sendErr != nil {
		switch {
		case errors.Is(o.sendErr, io.EOF): // the server ended the stream first
		case o.local && modelCode(o.sendErr) == endCode:
		case o.local && (modelCode(o.sendErr) == protocol.CodeCanceled || modelCode(o.sendErr) == protocol.CodeDeadlineExceeded):
		default:
			bad("Send failed with %v (the stream ended with %v)", o.sendErr, o.end)
		}
	}
	if o.closeSendErr != nil {
		bad("CloseSend failed: %v", o.closeSendErr)
	}
	return p
}

// modelChecks is the number of rapid cases: STREAMMODEL_CHECKS, or
// -rapid.checks when given, else def.
func modelChecks(t *testing.T, def int) {
	t.Helper()
	explicit := false
	flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "rapid.checks" })
	n := def
	if v, ok := os.LookupEnv("STREAMMODEL_CHECKS"); ok {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			t.Fatalf("STREAMMODEL_CHECKS=%q: %v", v, err)
		}
	} else if explicit {
		return
	}
	old := flag.Lookup("rapid.checks").Value.String()
	if err := flag.Set("rapid.checks", strconv.Itoa(n)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = flag.Set("rapid.checks", old) })
}

// modelServerOptions: two model streams run at a time and two wait (an
// hour at most: they wait for the running ones to end), more are refused;
// five calls per connection; 4 KiB of pre-admission stream bytes for the
// whole server and 8 KiB of queued bytes.
func modelServerOptions() server.Options {
	return server.Options{
		Calls:    server.CallCapacity{PerConnection: 5, PerServer: 100},
		Governor: governor.Limits{StreamBytes: 4 << 10},
		Admission: &kernel.Options{
			Services: map[string]kernel.Rule{"model": {Limits: []spi.Spec{concurrency.Spec(2)}}},
			Queue:    kernel.QueuePolicy{MaxQueuedCalls: 2, MaxQueuedBytes: 8 << 10, MaxQueueDelay: time.Hour},
		},
	}
}

// modelGuard bounds one case: a case still running after it is stuck.
const modelGuard = 60 * time.Second

// TestStreamInterleavingsAgainstAModel is the property: for every drawn
// case, each stream's observations fit its script (checkStream), no case
// deadlocks (modelGuard, then a goroutine dump and the script), and once
// every stream ended the server's ledger is zero and the client holds no
// stream and no credit (an exact check: the probe's dropped message makes
// both receivers return everything they batch).
func TestStreamInterleavingsAgainstAModel(t *testing.T) {
	modelChecks(t, 50)
	rapid.Check(t, func(rt *rapid.T) {
		n := rapid.IntRange(1, 5).Draw(rt, "streams")
		mc := &modelCase{}
		for i := range n {
			mc.streams = append(mc.streams, drawStream(rt, i))
			mc.obs = append(mc.obs, &streamObs{})
		}
		runModelCase(rt, mc)
	})
}

// failer is what runModelCase needs of a *rapid.T or a *testing.T.
type failer interface {
	Fatal(args ...any)
	Fatalf(format string, args ...any)
	Errorf(format string, args ...any)
}

// runModelCase runs mc on a new server and client, and checks it.
func runModelCase(rt failer, mc *modelCase) {
	mc.probeEntered = make(chan struct{}, 64)
	srv, err := server.New(modelMux(mc), modelServerOptions())
	if err != nil {
		rt.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		rt.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	defer func() {
		_ = srv.Close()
		if err := <-served; !errors.Is(err, server.ErrServerClosed) {
			rt.Errorf("Serve: %v", err)
		}
	}()
	dctx, dcancel := context.WithTimeout(context.Background(), 10*time.Second)
	c, err := client.Dial(dctx, []string{l.Addr().String()}, client.Options{})
	dcancel()
	if err != nil {
		rt.Fatal(err)
	}
	defer c.Close()

	done := make(chan struct{})
	go func() {
		defer close(done)
		var wg sync.WaitGroup
		for i, m := range mc.streams {
			wg.Go(func() { runClient(c, i, m, mc.obs[i]) })
		}
		wg.Wait()
	}()
	guard := time.NewTimer(modelGuard)
	defer guard.Stop()
	select {
	case <-done:
	case <-guard.C:
		buf := make([]byte, 1<<22)
		buf = buf[:runtime.Stack(buf, true)]
		rt.Fatalf("the case did not end within %v: a deadlock.\nscript:%s\ngoroutines:\n%s", modelGuard, mc.script(), buf)
	}
	var problems []string
	if p := probeAndCheckLedger(c, srv, mc.probeEntered); p != "" {
		problems = append(problems, p)
	}
	for i := range mc.streams { // the handlers have returned: the server holds no call
		for _, p := range mc.checkStream(i) {
			problems = append(problems, fmt.Sprintf("stream %d: %s", i, p))
		}
	}
	if len(problems) > 0 {
		rt.Fatalf("%s\nscript:%s", strings.Join(problems, "\n"), mc.script())
	}
}

// probeAndCheckLedger checks that the server holds nothing, and the client
// no stream, no unreturned credit and no message neither taken nor
// dropped; what the client keeps for its own batch is below a quarter of
// the window (else it would have sent it). To make the send direction
// exact it first probes: a stream whose handler (probe/Hold) signals that
// it runs (so the server has read every frame the case wrote before it),
// then waits until it is the server's only call (so no handler of the case
// can still take a message), then gets one byte it never receives, and is
// closed: the server drops the byte, and a drop returns at once every byte
// the server's connection window was keeping for its batch.
func probeAndCheckLedger(c *client.Client, srv *server.Server, entered <-chan struct{}) string {
	deadline := time.Now().Add(10 * time.Second)
	waitCalls := func(active int) string {
		for st := srv.Stats(); st.ServerCalls.Active != active || st.ServerCalls.Reserved != 0; st = srv.Stats() {
			if time.Now().After(deadline) {
				return fmt.Sprintf("after every stream ended for the client, the server still runs calls: %+v", st.ServerCalls)
			}
			time.Sleep(time.Millisecond)
		}
		return ""
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for {
		if p := waitCalls(0); p != "" {
			return p
		}
		p, err := c.NewStream(ctx, "probe/Hold", client.StreamBidi)
		if err != nil {
			return fmt.Sprintf("the probe: %v", err)
		}
		ended := make(chan error, 1)
		go func() { _, err := p.Receive(); ended <- err }()
		select {
		case <-entered:
		case err := <-ended:
			// Refused: a handler of the case still held call capacity
			// when the probe's Request was read. Again.
			_ = p.Close()
			if time.Now().After(deadline) {
				return fmt.Sprintf("the probe keeps being refused: %v", err)
			}
			continue
		}
		if msg := waitCalls(1); msg != "" {
			_ = p.Close()
			<-ended
			return msg
		}
		err = p.Send([]byte{1})
		_ = p.Close()
		<-ended
		if err != nil {
			return fmt.Sprintf("the probe's Send: %v", err)
		}
		break
	}
	var last string
	for {
		st := srv.Stats()
		g := st.Governor
		cl := client.StreamLedgerOf(c)
		zero := st.ServerCalls.Active == 0 && st.ServerCalls.Reserved == 0 && st.Admission.QueuedCalls == 0 && st.Admission.QueuedBytes == 0 &&
			g.Decodes.Used == 0 && g.Retained.Used == 0 && g.Decoded.Used == 0 && g.Stream.Used == 0 &&
			cl.Streams == 0 && cl.SentUnacked == 0 && cl.RecvHeld == 0 && cl.RecvPending < protocol.InitialConnWindow/4
		for _, sc := range st.Admission.Scopes {
			if (strings.HasSuffix(sc.Name, "/concurrency") && sc.InUse != 0) || sc.Waiters != 0 {
				zero = false
			}
		}
		if zero {
			if st.ProtocolViolations != 0 || st.Admission.DoubleReleases != 0 {
				return fmt.Sprintf("protocol violations %d, double releases %d", st.ProtocolViolations, st.Admission.DoubleReleases)
			}
			return ""
		}
		last = fmt.Sprintf("protocol violations %d, server calls %+v, queued %d calls %d bytes, governor %+v, scopes %+v; client %+v",
			st.ProtocolViolations, st.ServerCalls, st.Admission.QueuedCalls, st.Admission.QueuedBytes, g, st.Admission.Scopes, cl)
		if time.Now().After(deadline) {
			return "after every stream ended, something is still held: " + last
		}
		time.Sleep(time.Millisecond)
	}
}
