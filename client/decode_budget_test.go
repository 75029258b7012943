package client_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/client"
	"github.com/sluicerpc/sluice/codecs"
	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/protocol/status"
	"github.com/sluicerpc/sluice/spi"
)

// gatedCodec is gzip whose next decode of exactly gateAt declared bytes,
// once armed, signals entered and waits for release: a decode that holds
// its part of the client's decode budget for as long as the test wants.
type gatedCodec struct {
	spi.Codec
	gateAt  int
	armed   *atomic.Bool
	entered chan struct{}
	release chan struct{}
}

func newGatedCodec(gateAt int) gatedCodec {
	g := gatedCodec{Codec: codecs.Gzip(), gateAt: gateAt, armed: new(atomic.Bool), entered: make(chan struct{}, 1), release: make(chan struct{})}
	g.armed.Store(true)
	return g
}

func (g gatedCodec) Decompress(ctx context.Context, dst, src []byte, limit int) ([]byte, error) {
	if limit == g.gateAt && g.armed.CompareAndSwap(true, false) {
		g.entered <- struct{}{}
		<-g.release
	}
	return g.Codec.Decompress(ctx, dst, src, limit)
}

// The decode budget's sizes in these tests: one large body holds nearly
// all of it, a small one does not fit beside it.
const (
	budgetSize = 64 << 10
	largeBody  = 60 << 10
	smallBody  = 8 << 10
)

func budgetOptions(g gatedCodec) client.Options {
	return client.Options{
		Compression:     codecs.Config{Codecs: []spi.Codec{g}, MaxDecodedSize: budgetSize},
		MaxDecodedBytes: budgetSize,
		MaxAttempts:     1,
	}
}

func (g gatedCodec) waitEntered(t *testing.T) {
	t.Helper()
	select {
	case <-g.entered:
	case <-time.After(30 * time.Second):
		t.Fatal("the large body's decode never started")
	}
}

// TestTheClientsDecodesShareOneBudget (issue 36 section 4): the decodes
// of all calls hold at most Options.MaxDecodedBytes together. Before,
// each call's decode was bounded by its own declared length only, so
// concurrent bombs cost one declared length each. A small response that
// does not fit beside a large one being decoded waits: until its deadline
// (then DeadlineExceeded, naming the budget), or until the large decode
// gives its bytes back.
func TestTheClientsDecodesShareOneBudget(t *testing.T) {
	large, small := compressible(largeBody), compressible(smallBody)
	largeWire, smallWire := compress(t, "gzip", large), compress(t, "gzip", small)
	p := startCodecPeer(t, peerConfig{accept: []string{"gzip"}, respond: func(dst []byte, _ int, id uint64, req *protocol.Request) []byte {
		if string(req.Body) == "large" {
			return appendCompressed(dst, id, 1, uint32(len(large)), largeWire)
		}
		return appendCompressed(dst, id, 1, uint32(len(small)), smallWire)
	}})
	g := newGatedCodec(largeBody)
	c := dial(t, budgetOptions(g), p.addr)

	type result struct {
		body []byte
		err  error
	}
	call := func(ctx context.Context, what string) chan result {
		r := make(chan result, 1)
		go func() {
			b, err := c.CallRaw(ctx, "svc/M", []byte(what))
			r <- result{b, err}
		}()
		return r
	}
	first := call(ctxTimeout(t, time.Minute), "large")
	g.waitEntered(t) // the large decode holds 60 KiB of the 64 KiB

	_, err := c.CallRaw(ctxTimeout(t, 300*time.Millisecond), "svc/M", []byte("small"))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Equal(t, protocol.CodeDeadlineExceeded, status.Code(err))
	assert.ErrorContains(t, err, "decoded-bytes budget")

	waiting := call(ctxTimeout(t, time.Minute), "small")
	waitBlockedIn(t, "client.(*decodeBudget).acquire")
	close(g.release)
	r := <-first
	require.NoError(t, r.err)
	assert.Equal(t, large, r.body)
	r = <-waiting
	require.NoError(t, r.err)
	assert.Equal(t, small, r.body)

	// Everything was given back: a large body decodes at once.
	got, err := c.CallRaw(ctxTimeout(t, 10*time.Second), "svc/M", []byte("large"))
	require.NoError(t, err)
	assert.Equal(t, large, got)
	assert.Equal(t, 1, p.connections(), "the connection stayed up")
}

// TestAStreamMessageWaitsForTheDecodeBudget: stream messages share the
// budget with everything else; a Receive waiting for it ends with its
// stream's context, with an error naming the budget, and the stream is
// cancelled.
func TestAStreamMessageWaitsForTheDecodeBudget(t *testing.T) {
	large, small := compressible(largeBody), compressible(smallBody)
	largeWire, smallWire := compress(t, "gzip", large), compress(t, "gzip", small)
	p := startStreamPeerCodecs(t, streamCaps, []string{"gzip"})
	g := newGatedCodec(largeBody)
	c := dial(t, budgetOptions(g), p.addr)

	holding, err := c.NewStream(ctxTimeout(t, time.Minute), "svc/M", client.StreamBidi)
	require.NoError(t, err)
	waitCtx, cancelWait := context.WithCancel(context.Background())
	defer cancelWait()
	waiting, err := c.NewStream(waitCtx, "svc/M", client.StreamBidi)
	require.NoError(t, err)
	pc := p.next(t)
	h1, _ := pc.request(t)
	h2, _ := pc.request(t)
	compressedMessage := func(id uint64, declared int, wire []byte) []byte {
		f, err := protocol.AppendMessage(nil, id, &protocol.Message{Body: wire, Compressed: true, CodecID: 1, OriginalLength: uint32(declared)})
		require.NoError(t, err)
		return f
	}
	pc.write(t, compressedMessage(h1.ID, len(large), largeWire))
	pc.write(t, compressedMessage(h2.ID, len(small), smallWire))

	got := make(chan []byte, 1)
	go func() {
		b, err := holding.Receive()
		if err != nil {
			b = []byte(err.Error())
		}
		got <- append([]byte(nil), b...)
	}()
	g.waitEntered(t)

	received := make(chan error, 1)
	go func() {
		_, err := waiting.Receive()
		received <- err
	}()
	waitBlockedIn(t, "client.(*decodeBudget).acquire")
	cancelWait()
	select {
	case err := <-received:
		require.ErrorIs(t, err, context.Canceled)
		assert.Equal(t, protocol.CodeCanceled, status.Code(err))
		assert.ErrorContains(t, err, "decoded-bytes budget")
	case <-time.After(30 * time.Second):
		t.Fatal("the Receive waiting for the budget did not end with its context")
	}
	for { // the server is told (window updates may come first)
		h, _ := pc.read(t)
		if h.Type == protocol.FrameCancel && h.ID == h2.ID {
			break
		}
	}

	close(g.release)
	assert.Equal(t, large, <-got)
}

// A budget smaller than one response the client accepts is refused by
// Dial: such a response could never decode.
func TestADecodeBudgetBelowOneResponseIsRefused(t *testing.T) {
	_, err := client.Dial(context.Background(), []string{"127.0.0.1:1"}, client.Options{MaxDecodedBytes: 1 << 20})
	require.Error(t, err)
	assert.ErrorContains(t, err, "MaxDecodedBytes (1048576) is below Compression's MaxDecodedSize (67108864)")
}
