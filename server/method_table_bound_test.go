package server_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/server"
)

// A server announces its whole method table in every HandshakeAck, which
// a client holds for the connection's life: New refuses a Mux of more than
// protocol.MaxAckEntries services and methods (issue 36 section 3), and
// accepts one at the bound.
func TestNewRefusesAMethodTableAboveTheAckBound(t *testing.T) {
	mux := func(methods int) *server.Mux {
		m := server.NewMux()
		for i := range methods {
			m.HandleRaw("svc", fmt.Sprintf("M%d", i), func(context.Context, []byte) ([]byte, error) { return nil, nil })
		}
		return m
	}
	s, err := server.New(mux(protocol.MaxAckEntries-1), server.Options{})
	require.NoError(t, err)
	require.NoError(t, s.Close())

	_, err = server.New(mux(protocol.MaxAckEntries), server.Options{})
	require.EqualError(t, err, "server: the Mux has 4097 services and methods; the HandshakeAck announces at most 4096 (protocol.MaxAckEntries)")
}
