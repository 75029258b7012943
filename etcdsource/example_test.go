package etcdsource_test

import (
	"context"
	"fmt"
	"log"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/sluicerpc/sluice/control"
	"github.com/sluicerpc/sluice/etcdsource"
	"github.com/sluicerpc/sluice/server"
)

// A server takes its configuration from one etcd key: the source applies
// the key's document through the Controller, then every later revision of
// it. The caller owns the etcd client and closes it after Stop.
// Compile-only: it needs an etcd server (the package's tests start one
// with etcdtest, which needs a testing.TB).
func ExampleStart() {
	mux := server.NewMux()
	mux.HandleRaw("echo", "Say", func(_ context.Context, req []byte) ([]byte, error) { return req, nil })
	srv, err := server.New(mux, server.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	ctl := control.New(srv, control.Options{})

	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{"127.0.0.1:2379"}, DialTimeout: 5 * time.Second})
	if err != nil {
		log.Fatal(err)
	}
	defer cli.Close()
	src, err := etcdsource.Start(context.Background(), ctl, etcdsource.Options{Client: cli, Key: "/sluice/config"})
	if err != nil {
		log.Fatal(err) // invalid options; etcd's own failures are retried
	}
	defer src.Stop()
	select {
	case <-src.Ready(): // the key was read once: applied, rejected or missing
	case <-time.After(10 * time.Second):
		log.Fatal("etcd did not answer: ", src.Status().LastError)
	}
	fmt.Println(ctl.Current().Source, ctl.Current().Revision)

	// An operator's write is applied by the source's watch.
	if _, err := cli.Put(context.Background(), "/sluice/config", "version: 1\nserver: {calls: {per_connection: 8}}\n"); err != nil {
		log.Fatal(err)
	}
}
