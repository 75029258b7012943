package admin

import (
	"fmt"
	"net/http"
	"time"
)

// EventWriteTimeout bounds each write of GET /v1/events: a client that
// takes no byte of an event for this long has its connection closed (the
// backlog bounds the events it falls behind by; this bounds the time).
const EventWriteTimeout = 10 * time.Second

// MinEventInterval is the shortest Options.EventInterval.
const MinEventInterval = 10 * time.Millisecond

// endEvent is the last event of a stream the server ended because it
// stopped.
const endEvent = "event: end\ndata: {\"reason\":\"the server has stopped\"}\n\n"

// frame is data as the event of sequence number seq.
func frame(seq uint64, data []byte) []byte {
	return fmt.Appendf(nil, "id: %d\nevent: sample\ndata: %s\n\n", seq, data)
}

// events: GET /v1/events, the server's samples as server-sent events
// (doc.go). The stream lasts while the client reads it and the server
// runs; the http.Server's WriteTimeout, which would end it, is replaced
// by a deadline of EventWriteTimeout for each write (net/http lifts the
// ReadTimeout itself once the request is read).
func (h *handler) events(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("Cache-Control", "no-store")
	hd.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)

	write := func(b []byte) bool {
		_ = rc.SetWriteDeadline(time.Now().Add(EventWriteTimeout))
		if _, err := w.Write(b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	s := h.hub.subscribe(r.RemoteAddr) // its backlog holds a first sample
	defer h.hub.unsubscribe(s)
	for {
		select {
		case <-r.Context().Done():
			return
		case b := <-s.backlog:
			if !write(b) {
				return
			}
		case <-s.end:
			if s.why != endStopped {
				return // dropped: behind by the whole backlog already
			}
			for {
				select {
				case b := <-s.backlog:
					if !write(b) {
						return
					}
				default:
					write([]byte(endEvent))
					return
				}
			}
		}
	}
}
