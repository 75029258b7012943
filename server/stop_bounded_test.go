package server_test

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/server"
)

// Stop is bounded by its context even when a peer never reads: its
// responses fill the socket (here: the server's writes stall, as on a full
// socket) and the connection's writer, the GoAway cannot be written, and
// when the context ends Stop closes everything and returns the context's
// error.
func TestStopIsBoundedWhenAPeerNeverReads(t *testing.T) {
	for _, idle := range []bool{false, true} {
		name := "calls blocked on the writer"
		if idle {
			name = "no call in flight, the flush blocked"
		}
		t.Run(name, func(t *testing.T) {
			o := server.Options{}
			if idle {
				// Every answer fits the writer's buffer: the calls end,
				// the flush does not.
				o.WriteBufferSize = 64 << 20
			}
			s, sl := startStallServer(t, o)
			c := dialRaw(t, s.addr)
			body := make([]byte, 256<<10)
			if idle {
				// Every answer fits the writer's buffer: the calls end
				// once their answers are queued; the flush stalls.
				sl.stallWrites()
				for range 4 {
					c.send("echo", "Say", body, nil)
				}
				require.Eventually(t, func() bool {
					st := s.Stats()
					return st.Calls >= 4 && st.ServerCalls.Active == 0
				}, 30*time.Second, time.Millisecond)
			} else {
				// Answers of 48 KiB against the 64 KiB buffer: the first
				// stalls in the flush, the second is pending, the third
				// waits for space. The writer is saturated only while a
				// call waits, so when the reader pauses (backpressure) a
				// call is blocked on the writer, and stays blocked.
				// Requests go on beside the test until the connection
				// closes: the reader stops reading them.
				sl.stallWrites()
				frames := make([][]byte, 200)
				for i := range frames {
					frames[i] = c.requestFrame("echo", "Say", body[:48<<10])
				}
				go func() {
					_ = c.nc.SetWriteDeadline(time.Time{}) // the server stops reading for a while
					for _, f := range frames {
						if _, err := c.nc.Write(f); err != nil {
							return
						}
					}
				}()
				// (A call blocked on the writer has given back its call
				// capacity already, as its handler returned: Stop's
				// DeadlineExceeded below shows it is still in flight.)
				require.Eventually(t, func() bool {
					return s.Stats().Backpressure > 0
				}, 30*time.Second, time.Millisecond, "no call blocked on the writer with the reader paused: %+v", s.Stats())
			}
			ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
			defer cancel()
			stopped := make(chan error, 1)
			go func() { stopped <- s.Stop(ctx) }()
			select {
			case err := <-stopped:
				require.ErrorIs(t, err, context.DeadlineExceeded)
			case <-time.After(20 * time.Second):
				t.Fatal("Stop is still running 20 s after its context ended")
			}
			require.Zero(t, s.Stats().Connections)
			var ne net.Error
			_ = c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
			for { // the peer sees the connection end
				if _, _, err := c.rd.ReadFrame(); err != nil {
					require.False(t, errors.As(err, &ne) && ne.Timeout(), "the connection was not closed")
					break
				}
			}
		})
	}
}
