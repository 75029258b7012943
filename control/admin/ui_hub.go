package admin

import (
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"github.com/sluicerpc/sluice/server"
)

// EventBacklog is how many samples GET /v1/events holds for one client
// that has not taken them yet. A client further behind is dropped: its
// stream ends, and nothing is buffered for it without bound.
const EventBacklog = 8

// DefaultEventInterval is the sampling period of GET /v1/events by
// default.
const DefaultEventInterval = 500 * time.Millisecond

// hub samples one server for the clients of GET /v1/events. Its sampler
// goroutine runs only while at least one client is subscribed: the first
// subscription starts it, and it ends when the last one leaves, when it
// drops the last one, or when the server has stopped (its kernel is
// sealed: every subscription then ends). A sample is taken and encoded
// once per tick and shared by every client; handing it to a client never
// blocks (a client whose backlog is full is dropped).
type hub struct {
	srv      *server.Server
	interval time.Duration
	log      *slog.Logger
	now      func() time.Time
	// ticker returns the sampler's ticks and a func that stops them
	// (tests tick by hand).
	ticker func(time.Duration) (<-chan time.Time, func())
	// hooks are test hooks, each nil but in tests; called on the
	// sampler's goroutine.
	hooks hubHooks

	mu   sync.Mutex
	seq  uint64
	subs map[*subscription]struct{}
	stop chan struct{} // nil: no sampler running
}

type hubHooks struct {
	started, stopped func()
	dropped          func(remote string)
}

// subscription is one client's stream: its backlog of framed events,
// and end, closed (with why set first) when the hub ends the stream.
type subscription struct {
	remote  string
	backlog chan []byte
	end     chan struct{}
	why     endReason
}

type endReason int

const (
	endNone    endReason = iota
	endSlow              // dropped: the backlog was full
	endStopped           // the server has stopped
)

func newHub(srv *server.Server, interval time.Duration, log *slog.Logger) *hub {
	return &hub{srv: srv, interval: interval, log: log, now: time.Now, subs: map[*subscription]struct{}{},
		ticker: func(d time.Duration) (<-chan time.Time, func()) {
			t := time.NewTicker(d)
			return t.C, t.Stop
		}}
}

// frameLocked numbers and frames st as the next event; h.mu held (the
// events of every stream are in the order of their numbers).
func (h *hub) frameLocked(st server.Stats) []byte {
	h.seq++
	b, err := json.Marshal(sampleOf(st, h.seq, h.now(), h.interval))
	if err != nil { // our own types: cannot happen
		panic("admin: encoding a sample: " + err.Error())
	}
	return frame(h.seq, b)
}

// subscribe adds a client, starting the sampler if none runs. Its backlog
// holds a first sample already (a client need not wait a period for
// one). When the server has stopped, the subscription is ended at once
// (that sample is its last) and no sampler starts.
func (h *hub) subscribe(remote string) *subscription {
	s := &subscription{remote: remote, backlog: make(chan []byte, EventBacklog), end: make(chan struct{})}
	st := h.srv.Stats()
	h.mu.Lock()
	defer h.mu.Unlock()
	s.backlog <- h.frameLocked(st)
	if st.Admission.Sealed {
		s.why = endStopped
		close(s.end)
		return s
	}
	h.subs[s] = struct{}{}
	if h.stop == nil {
		h.stop = make(chan struct{})
		tick, stopTick := h.ticker(h.interval)
		go h.run(h.stop, tick, stopTick)
	}
	return s
}

// unsubscribe removes s (if the hub has not ended it), stopping the
// sampler when s was the last client. It does not wait for the sampler:
// the sampler never blocks, and ends at its next select.
func (h *hub) unsubscribe(s *subscription) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.subs[s]; !ok {
		return
	}
	delete(h.subs, s)
	if len(h.subs) == 0 && h.stop != nil {
		close(h.stop)
		h.stop = nil
	}
}

// run is the sampler: one sample per tick to every client, until stop is
// closed or no client is left.
func (h *hub) run(stop chan struct{}, tick <-chan time.Time, stopTick func()) {
	defer stopTick()
	if f := h.hooks.started; f != nil {
		f()
	}
	if f := h.hooks.stopped; f != nil {
		defer f()
	}
	for {
		select {
		case <-stop:
			return
		case <-tick:
		}
		if !h.broadcast(stop, h.srv.Stats()) {
			return
		}
	}
}

// broadcast hands the sample of st to every client without blocking,
// dropping those whose backlog is full, and ending every stream when the
// server has stopped. It reports whether the sampler goes on: false when
// it has no client left (it then marks the hub as without a sampler), or
// when stop was closed meanwhile.
func (h *hub) broadcast(stop chan struct{}, st server.Stats) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stop != stop { // the last client left since the tick
		return false
	}
	data, stopped := h.frameLocked(st), st.Admission.Sealed
	for s := range h.subs {
		select {
		case s.backlog <- data:
			if stopped {
				h.endLocked(s, endStopped)
			}
		default:
			h.endLocked(s, endSlow)
			h.log.Warn("admin API: event stream dropped: the client did not keep up", "remote", s.remote, "backlog", EventBacklog)
			if f := h.hooks.dropped; f != nil {
				f(s.remote)
			}
		}
	}
	if stopped {
		for s := range h.subs {
			h.endLocked(s, endStopped)
		}
	}
	if len(h.subs) == 0 {
		h.stop = nil
		return false
	}
	return true
}

// endLocked ends s's stream for why; h.mu held.
func (h *hub) endLocked(s *subscription, why endReason) {
	delete(h.subs, s)
	s.why = why
	close(s.end)
}
