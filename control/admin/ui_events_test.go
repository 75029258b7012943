package admin_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/control"
	"github.com/sluicerpc/sluice/control/admin"
)

// eventAPI is the admin API of a real server whose event sampler ticks
// when the test says, with hooks that report the sampler's life and the
// drops, and its log lines in logs.
type eventAPI struct {
	*api
	tick             chan time.Time
	started, stopped chan struct{}
	dropped          chan string
	logs             *syncBuffer
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// newEventAPI serves the API through ts (nil: httptest.NewServer); wrap,
// when not nil, wraps the listener.
func newEventAPI(t *testing.T, wrap func(net.Listener) net.Listener) *eventAPI {
	t.Helper()
	srv := newServer(t)
	ctl := control.New(srv, control.Options{})
	logs := &syncBuffer{}
	h, err := admin.NewHandler(ctl, admin.Options{Token: []byte(token), Logger: slog.New(slog.NewTextHandler(logs, nil))})
	require.NoError(t, err)
	e := &eventAPI{tick: make(chan time.Time), started: make(chan struct{}, 16), stopped: make(chan struct{}, 16), dropped: make(chan string, 16), logs: logs}
	admin.SetEventHooks(h, admin.EventHooks{
		Tick:    e.tick,
		Started: func() { e.started <- struct{}{} },
		Stopped: func() { e.stopped <- struct{}{} },
		Dropped: func(remote string) { e.dropped <- remote },
	})
	ts := httptest.NewUnstartedServer(h)
	if wrap != nil {
		ts.Listener = wrap(ts.Listener)
	}
	ts.Start()
	hc := &http.Client{Transport: &http.Transport{}}
	t.Cleanup(func() {
		hc.CloseIdleConnections()
		ts.Close()
	})
	e.api = &api{t: t, srv: srv, ctl: ctl, url: ts.URL, hc: hc, cl: &admin.Client{BaseURL: ts.URL, Token: []byte(token), HTTPClient: hc}}
	return e
}

// event is one server-sent event.
type event struct {
	name, id, data string
}

// eventStream reads GET /v1/events.
type eventStream struct {
	t      *testing.T
	resp   *http.Response
	r      *bufio.Reader
	cancel context.CancelFunc
}

// open opens the stream with the right token.
func (a *api) openEvents() *eventStream {
	a.t.Helper()
	// A bound on the whole stream: a test that waits for an event that
	// never comes fails instead of hanging.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, a.url+"/v1/events", nil)
	require.NoError(a.t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := a.hc.Do(req)
	require.NoError(a.t, err)
	s := &eventStream{t: a.t, resp: resp, r: bufio.NewReader(resp.Body), cancel: cancel}
	a.t.Cleanup(s.close)
	return s
}

func (s *eventStream) close() {
	s.cancel()
	_ = s.resp.Body.Close()
}

// next reads the next event; io.EOF when the stream ended.
func (s *eventStream) next() (event, error) {
	var ev event
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			return ev, err
		}
		line = strings.TrimSuffix(line, "\n")
		if line == "" {
			return ev, nil
		}
		field, val, _ := strings.Cut(line, ": ")
		switch field {
		case "event":
			ev.name = val
		case "id":
			ev.id = val
		case "data":
			ev.data = val
		default:
			s.t.Fatalf("unexpected line %q", line)
		}
	}
}

// sample reads the next event, which must be a sample.
func (s *eventStream) sample() admin.Sample {
	s.t.Helper()
	ev, err := s.next()
	require.NoError(s.t, err)
	require.Equal(s.t, "sample", ev.name)
	var smp admin.Sample
	require.NoError(s.t, json.Unmarshal([]byte(ev.data), &smp), ev.data)
	require.Equal(s.t, ev.id, jsonNumber(smp.Seq))
	return smp
}

func jsonNumber(n uint64) string { b, _ := json.Marshal(n); return string(b) }

func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(30 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// doTick ticks the sampler.
func (e *eventAPI) doTick() {
	e.t.Helper()
	select {
	case e.tick <- time.Now():
	case <-time.After(30 * time.Second):
		e.t.Fatal("the sampler took no tick")
	}
}

// The stream needs the token like every API path, and a refused request
// starts no sampler.
func TestEventsNeedTheToken(t *testing.T) {
	e := newEventAPI(t, nil)
	for _, auth := range [][]string{nil, {"Authorization", "Bearer " + strings.Repeat("x", len(token))}} {
		r := e.doAuth(http.MethodGet, "/v1/events", nil, auth...)
		assert.Equal(t, http.StatusUnauthorized, r.code)
		assert.Equal(t, "application/json", r.header.Get("Content-Type"))
	}
	r := e.do(http.MethodPost, "/v1/events", nil)
	assert.Equal(t, http.StatusMethodNotAllowed, r.code)
	assert.Equal(t, "GET", r.header.Get("Allow"))
	assert.Empty(t, e.started, "no sampler started")
	assert.NotContains(t, e.logs.String(), strings.Repeat("x", len(token)), "no token in the log")
}

// The stream is text/event-stream: a sample at once, then one per tick,
// each "id: <seq>", "event: sample", "data: <one line of JSON>"; the
// samples follow the configuration (generation, scopes with their limits).
func TestEventsStreamSamples(t *testing.T) {
	e := newEventAPI(t, nil)
	s := e.openEvents()
	assert.Equal(t, http.StatusOK, s.resp.StatusCode)
	assert.Equal(t, "text/event-stream", s.resp.Header.Get("Content-Type"))
	assert.Equal(t, "no-store", s.resp.Header.Get("Cache-Control"))

	first := s.sample()
	assert.Equal(t, uint64(1), first.Seq)
	assert.Equal(t, uint64(0), first.Generation)
	assert.False(t, first.Enabled)
	assert.Equal(t, admin.DefaultEventInterval.Milliseconds(), first.IntervalMS)
	assert.NotNil(t, first.Refused)
	assert.Empty(t, first.Scopes)
	recv(t, e.started, "the sampler to start")

	require.Equal(t, http.StatusOK, e.put(docConcurrency2, `"0"`).code)
	e.doTick()
	second := s.sample()
	assert.Equal(t, uint64(2), second.Seq)
	assert.Equal(t, uint64(1), second.Generation)
	assert.True(t, second.Enabled)
	require.Len(t, second.Scopes, 1)
	assert.Equal(t, admin.ScopeSample{Name: second.Scopes[0].Name, Kind: "concurrency", Limit: 2, Active: 0, Available: 2}, second.Scopes[0])
	assert.False(t, second.Time.Before(first.Time))

	s.close()
	recv(t, e.stopped, "the sampler to stop once its only client left")
}

// One sampler serves every client while at least one listens, and a new
// one starts with the next client after the last left.
func TestEventsSamplerRunsOnlyWhileListened(t *testing.T) {
	e := newEventAPI(t, nil)
	a := e.openEvents()
	a.sample()
	recv(t, e.started, "the sampler to start")
	b := e.openEvents()
	b.sample()
	e.doTick()
	sa, sb := a.sample(), b.sample()
	assert.Equal(t, sa.Seq, sb.Seq, "one sample shared")
	assert.Empty(t, e.started, "one sampler for both")

	a.close()
	e.doTick() // the sampler goes on for b
	b.sample()
	assert.Empty(t, e.stopped)
	b.close()
	recv(t, e.stopped, "the sampler to stop")

	c := e.openEvents()
	c.sample()
	recv(t, e.started, "a new sampler for the next client")
	c.close()
	recv(t, e.stopped, "the sampler to stop")
}

// smallBuffers sets small socket buffers on every accepted connection, so
// that a client that does not read blocks the server's writes soon.
type smallBuffers struct{ net.Listener }

func (l smallBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(4096)
	}
	return c, err
}

// A client that does not read is dropped once EventBacklog samples wait
// for it (one warning, without the token); a client that reads goes on
// receiving every sample meanwhile.
func TestEventsDropSlowClients(t *testing.T) {
	e := newEventAPI(t, func(l net.Listener) net.Listener { return smallBuffers{l} })
	fast := e.openEvents()
	fast.sample()
	recv(t, e.started, "the sampler to start")

	// The slow client: a raw connection with a small receive buffer that
	// sends the request and never reads.
	nc, err := net.Dial("tcp", strings.TrimPrefix(e.url, "http://"))
	require.NoError(t, err)
	defer nc.Close()
	require.NoError(t, nc.(*net.TCPConn).SetReadBuffer(4096))
	_, err = io.WriteString(nc, "GET /v1/events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer "+token+"\r\n\r\n")
	require.NoError(t, err)

	var last uint64
	var slow string
	for ticks := 0; slow == ""; ticks++ {
		require.Less(t, ticks, 100000, "the slow client was never dropped")
		select {
		case e.tick <- time.Now():
			smp := fast.sample()
			assert.Greater(t, smp.Seq, last)
			last = smp.Seq
		case slow = <-e.dropped:
		}
	}
	assert.Equal(t, nc.LocalAddr().String(), slow)
	// The fast client still gets every sample.
	e.doTick()
	assert.Greater(t, fast.sample().Seq, last)
	logs := e.logs.String()
	assert.Contains(t, logs, "event stream dropped: the client did not keep up")
	assert.Contains(t, logs, slow)
	assert.NotContains(t, logs, token)
}

// When the server stops, each stream gets a last sample and an "end"
// event, then ends; the sampler stops; a stream opened afterwards gets one
// sample and the end.
func TestEventsEndWhenTheServerStops(t *testing.T) {
	e := newEventAPI(t, nil)
	s := e.openEvents()
	s.sample()
	recv(t, e.started, "the sampler to start")
	require.NoError(t, e.srv.Close())
	e.doTick()
	s.sample()
	ev, err := s.next()
	require.NoError(t, err)
	assert.Equal(t, event{name: "end", data: `{"reason":"the server has stopped"}`}, ev)
	_, err = s.next()
	assert.ErrorIs(t, err, io.EOF)
	recv(t, e.stopped, "the sampler to stop")

	after := e.openEvents()
	after.sample()
	ev, err = after.next()
	require.NoError(t, err)
	assert.Equal(t, "end", ev.name)
	_, err = after.next()
	assert.ErrorIs(t, err, io.EOF)
	assert.Empty(t, e.started, "no sampler for a stopped server")
}

// The stream outlives the http.Server's ReadTimeout and WriteTimeout
// (which would cancel it and fail its writes).
func TestEventsOutliveTheServerTimeouts(t *testing.T) {
	srv := newServer(t)
	h, err := admin.NewHandler(control.New(srv, control.Options{}), admin.Options{Token: []byte(token)})
	require.NoError(t, err)
	tick := make(chan time.Time)
	admin.SetEventHooks(h, admin.EventHooks{Tick: tick})
	ts := httptest.NewUnstartedServer(h)
	const timeout = 100 * time.Millisecond
	ts.Config.ReadTimeout, ts.Config.WriteTimeout = timeout, timeout
	ts.Start()
	defer ts.Close()
	hc := &http.Client{Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	a := &api{t: t, url: ts.URL, hc: hc}
	s := a.openEvents()
	s.sample()
	// Both deadlines, set when the request was read, pass (a real
	// deadline: only real time makes it pass).
	time.Sleep(3 * timeout)
	select {
	case tick <- time.Now():
	case <-time.After(30 * time.Second):
		t.Fatal("the sampler took no tick")
	}
	assert.Equal(t, uint64(2), s.sample().Seq)
	s.close()
}

// EventInterval below the minimum is refused.
func TestNewHandlerRefusesShortEventIntervals(t *testing.T) {
	ctl := control.New(newServer(t), control.Options{})
	_, err := admin.NewHandler(ctl, admin.Options{Token: []byte(token), EventInterval: time.Millisecond})
	assert.ErrorContains(t, err, "EventInterval: 1ms is below the minimum 10ms")
	_, err = admin.NewHandler(ctl, admin.Options{Token: []byte(token), EventInterval: -time.Second})
	assert.ErrorContains(t, err, "EventInterval")
	_, err = admin.NewHandler(ctl, admin.Options{Token: []byte(token), EventInterval: admin.MinEventInterval})
	assert.NoError(t, err)
}
