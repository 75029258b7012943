package admin_test

import (
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/control/admin"
)

// TestLimitListenerCapsConnections (issue 26 section 2): with a cap of 2
// per address (every test connection comes from 127.0.0.1), a third
// connection is closed at accept, and a place given back admits the next.
// The total cap works the same way.
func TestLimitListenerCapsConnections(t *testing.T) {
	for _, c := range []struct {
		name              string
		total, perAddress int
	}{{"per address", 100, 2}, {"total", 2, 100}} {
		t.Run(c.name, func(t *testing.T) {
			tcp, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(t, err)
			l := admin.LimitListener(tcp, c.total, c.perAddress)
			defer l.Close()
			accepted := make(chan net.Conn, 8)
			go func() {
				for {
					nc, err := l.Accept()
					if err != nil {
						close(accepted)
						return
					}
					accepted <- nc
				}
			}()
			dial := func() net.Conn {
				nc, err := net.Dial("tcp", tcp.Addr().String())
				require.NoError(t, err)
				t.Cleanup(func() { _ = nc.Close() })
				return nc
			}
			held := func() net.Conn {
				t.Helper()
				select {
				case nc := <-accepted:
					return nc
				case <-time.After(10 * time.Second):
					t.Fatal("not accepted")
					return nil
				}
			}
			closedByServer := func(nc net.Conn) bool {
				require.NoError(t, nc.SetReadDeadline(time.Now().Add(10*time.Second)))
				_, err := nc.Read(make([]byte, 1))
				var ne net.Error
				return errors.Is(err, io.EOF) || (err != nil && !(errors.As(err, &ne) && ne.Timeout()))
			}
			dial()
			first := held()
			dial()
			held()
			over := dial()
			assert.True(t, closedByServer(over), "the third connection is closed at accept")
			assert.Equal(t, uint64(1), l.Refused())
			assert.Equal(t, 2, l.Live())

			require.NoError(t, first.Close())
			_ = first.Close() // fails (already closed) and gives back nothing more
			assert.Equal(t, 1, l.Live())
			dial()
			held()
			assert.Equal(t, 2, l.Live())
		})
	}
}
