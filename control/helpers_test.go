package control_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/control"
	"github.com/sluicerpc/sluice/server"
)

// newServer is a server of echo/Say and echo/Sleep (not serving: the
// controller needs none of its connections), stopped when the test ends.
func newServer(t *testing.T) *server.Server {
	t.Helper()
	mux := server.NewMux()
	mux.HandleRaw("echo", "Say", func(_ context.Context, req []byte) ([]byte, error) { return req, nil })
	mux.HandleRaw("echo", "Sleep", func(ctx context.Context, _ []byte) ([]byte, error) { <-ctx.Done(); return nil, ctx.Err() })
	srv, err := server.New(mux, server.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}

func latest(doc string) control.Change {
	return control.Change{Source: control.SourceFile, Origin: "sluice.yaml", Name: "sluice.yaml", Document: []byte(doc), Latest: true}
}

const docConcurrency2 = `version: 1
server:
  admission:
    global:
      limits: [{kind: concurrency, limit: 2}]
  calls: {per_connection: 8, per_server: 64}
`
