package admin

import (
	"net/http"
	"time"
)

// EventHooks are the test hooks of a handler's event stream: Tick
// replaces the sampler's ticker (nil: the real one); Started and Stopped
// are called as each sampler goroutine starts and ends; Dropped when a
// slow client is dropped.
type EventHooks struct {
	Tick             <-chan time.Time
	Started, Stopped func()
	Dropped          func(remote string)
}

// SetEventHooks installs hooks on h, a handler of NewHandler, before it
// serves a request.
func SetEventHooks(h http.Handler, hooks EventHooks) {
	hb := h.(*handler).hub
	if hooks.Tick != nil {
		hb.ticker = func(time.Duration) (<-chan time.Time, func()) { return hooks.Tick, func() {} }
	}
	hb.hooks = hubHooks{started: hooks.Started, stopped: hooks.Stopped, dropped: hooks.Dropped}
}

// SetRefusalClock makes h's refusal log read now instead of the system
// clock.
func SetRefusalClock(h http.Handler, now func() time.Time) { h.(*handler).refusal.now = now }
