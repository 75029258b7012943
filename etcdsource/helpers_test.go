package etcdsource_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/sluicerpc/sluice/control"
	"github.com/sluicerpc/sluice/etcdsource"
	"github.com/sluicerpc/sluice/etcdtest"
	"github.com/sluicerpc/sluice/server"
)

// patience bounds every wait for something a real etcd and the source's
// goroutine do; generous for a busy 2-core machine running -race. It is
// never asserted as a duration.
const patience = 30 * time.Second

const key = "/sluice/config"

// fixture is a real etcd, a client of it for the test's writes, and a
// real server with its Controller.
type fixture struct {
	t      *testing.T
	etcd   *etcdtest.Server
	cli    *clientv3.Client
	srv    *server.Server
	ctl    *control.Controller
	events chan etcdsource.Event
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	f := &fixture{t: t, etcd: etcdtest.Start(t), events: make(chan etcdsource.Event, 1024)}
	cli, err := clientv3.New(f.etcd.ClientConfig())
	require.NoError(t, err)
	t.Cleanup(func() { _ = cli.Close() })
	f.cli = cli
	mux := server.NewMux()
	mux.HandleRaw("echo", "Say", func(_ context.Context, req []byte) ([]byte, error) { return req, nil })
	f.srv, err = server.New(mux, server.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = f.srv.Close() })
	f.ctl = control.New(f.srv, control.Options{})
	return f
}

// start starts a source on the fixture's key with its own etcd client;
// mod adjusts the options. The source is stopped, then its client
// closed, when the test ends.
func (f *fixture) start(mod func(*etcdsource.Options)) *etcdsource.Source {
	f.t.Helper()
	cli, err := clientv3.New(f.etcd.ClientConfig())
	require.NoError(f.t, err)
	f.t.Cleanup(func() { _ = cli.Close() })
	o := etcdsource.Options{Client: cli, Key: key, OnEvent: func(ev etcdsource.Event) { f.events <- ev }}
	if mod != nil {
		mod(&o)
	}
	src, err := etcdsource.Start(context.Background(), f.ctl, o)
	require.NoError(f.t, err)
	f.t.Cleanup(src.Stop)
	return src
}

func (f *fixture) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	f.t.Cleanup(cancel)
	return ctx
}

// put writes doc at the key and returns its revision.
func (f *fixture) put(doc string) int64 {
	f.t.Helper()
	resp, err := f.cli.Put(f.ctx(), key, doc)
	require.NoError(f.t, err)
	return resp.Header.Revision
}

// next returns the source's next event.
func (f *fixture) next() etcdsource.Event {
	f.t.Helper()
	select {
	case ev := <-f.events:
		return ev
	case <-time.After(patience):
		f.t.Fatalf("no event from the source within %v", patience)
		return etcdsource.Event{}
	}
}

// waitFor returns the first event of kind, logging the ones before it.
func (f *fixture) waitFor(kind etcdsource.EventKind) etcdsource.Event {
	f.t.Helper()
	for {
		ev := f.next()
		if ev.Kind == kind {
			return ev
		}
		f.t.Logf("event before %v: %v revision=%d err=%v", kind, ev.Kind, ev.Revision, ev.Err)
	}
}

// doc is a valid document whose global concurrency limit is n.
func doc(n int) string {
	return fmt.Sprintf(`version: 1
server:
  admission:
    global:
      limits: [{kind: concurrency, limit: %d}]
`, n)
}
