package etcdtest_test

import (
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/sluicerpc/sluice/etcdtest"
)

// A test starts a real etcd and talks to it through the etcd client;
// Restart takes it away and brings it back with its data. Compile-only:
// Start needs the test's testing.TB, which an example does not have (and
// the etcd binary).
func ExampleStart() {
	testSurvivesRestart := func(t *testing.T) {
		s := etcdtest.Start(t) // stopped at t's cleanup; skipped (CI=true: failed) without etcd
		cli, err := clientv3.New(s.ClientConfig())
		if err != nil {
			t.Fatal(err)
		}
		defer cli.Close()
		ctx := t.Context()
		if _, err := cli.Put(ctx, "/sluice/config", "version: 1\n"); err != nil {
			t.Fatal(err)
		}
		s.Restart() // same data directory and ports: the client reconnects
		resp, err := cli.Get(ctx, "/sluice/config")
		if err != nil || len(resp.Kvs) != 1 {
			t.Fatalf("after Restart: %v, %v", resp, err)
		}
	}
	_ = testSurvivesRestart
}
