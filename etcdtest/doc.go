// Package etcdtest runs a real etcd server for tests: the etcd binary
// (Debian's etcd-server package, installed by scripts/deps.sh) as a child
// process on free loopback ports, in the test's temporary directory, never
// a mock.
//
// Start returns once the server serves (a Get through
// go.etcd.io/etcd/client/v3 succeeded) and stops it at the test's cleanup;
// Restart stops it and starts it again on the same data directory and
// ports, so a test can take etcd away mid-test and bring it back with its
// data. When the binary is missing, Start fails the test under CI=true and
// skips it elsewhere.
//
// The binary, not go.etcd.io/etcd/server/v3/embed: the issue names the
// Debian package, a child process is what a deployment runs (its own
// process, its own shutdown, a restart that really loses every connection),
// and embed would link etcd's whole server tree (raft, bbolt, its own gRPC
// gateway and their pinned versions) into every test binary that imports
// this package.
package etcdtest
