package etcdtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/goleak"
)

// TestMain fails the package if any test leaves a goroutine behind (the
// readiness client's, a wait on etcd's process).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// client returns an etcd client on s, closed at t's cleanup.
func client(t *testing.T, s *Server) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(s.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), startTimeout)
	t.Cleanup(cancel)
	return c
}

func get(t *testing.T, cli *clientv3.Client, key string) string {
	t.Helper()
	resp, err := cli.Get(ctx(t), key)
	if err != nil {
		t.Fatalf("Get %q: %v", key, err)
	}
	if len(resp.Kvs) != 1 {
		t.Fatalf("Get %q: %d keys, want 1", key, len(resp.Kvs))
	}
	return string(resp.Kvs[0].Value)
}

func TestStartPutGet(t *testing.T) {
	s := Start(t)
	cli := client(t, s)
	if _, err := cli.Put(ctx(t), "k", "v1"); err != nil {
		t.Fatal(err)
	}
	if got := get(t, cli, "k"); got != "v1" {
		t.Fatalf("Get k = %q, want v1", got)
	}
}

func TestRestartKeepsDataAndEndpoints(t *testing.T) {
	s := Start(t)
	before := s.Endpoints()
	pid := s.proc.cmd.Process.Pid
	cli := client(t, s)
	if _, err := cli.Put(ctx(t), "k", "kept"); err != nil {
		t.Fatal(err)
	}
	s.Restart()
	if got := s.Endpoints(); len(got) != 1 || got[0] != before[0] {
		t.Fatalf("Endpoints after Restart = %v, want %v", got, before)
	}
	if s.proc.cmd.Process.Pid == pid {
		t.Fatalf("Restart kept process %d", pid)
	}
	// The client made before the restart reconnects to the same endpoint.
	if got := get(t, cli, "k"); got != "kept" {
		t.Fatalf("Get k after Restart = %q, want kept", got)
	}
}

func TestStopEndsProcessAndFreesPorts(t *testing.T) {
	s := Start(t)
	pid := s.proc.cmd.Process.Pid
	s.Stop()
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("after Stop, kill(%d, 0) = %v, want ESRCH (process gone)", pid, err)
	}
	for _, raw := range []string{s.clientURL, s.peerURL} {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		l, err := net.Listen("tcp", u.Host)
		if err != nil {
			t.Fatalf("after Stop, %s is not free: %v", u.Host, err)
		}
		l.Close()
	}
	s.Stop() // a second Stop does nothing
}

func TestStopThenRestart(t *testing.T) {
	s := Start(t)
	cli := client(t, s)
	if _, err := cli.Put(ctx(t), "k", "v"); err != nil {
		t.Fatal(err)
	}
	s.Stop()
	c, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := cli.Get(c, "k"); err == nil {
		t.Fatal("Get succeeded while etcd was stopped")
	}
	s.Restart()
	if got := get(t, cli, "k"); got != "v" {
		t.Fatalf("Get k = %q, want v", got)
	}
}

func TestMissingVerdict(t *testing.T) {
	lookErr := errors.New(`exec: "etcd": executable file not found in $PATH`)
	for _, tc := range []struct {
		ci    string
		fatal bool
	}{
		{"true", true},
		{"1", true},
		{"TRUE", true},
		{"", false},
		{"false", false},
		{"0", false},
	} {
		fatal, msg := missingVerdict(func(k string) string {
			if k == "CI" {
				return tc.ci
			}
			return ""
		}, lookErr)
		if fatal != tc.fatal {
			t.Errorf("CI=%q: fatal = %v, want %v", tc.ci, fatal, tc.fatal)
		}
		if !strings.Contains(msg, "run scripts/deps.sh") || !strings.Contains(msg, lookErr.Error()) {
			t.Errorf("CI=%q: message %q does not name scripts/deps.sh and the lookup error", tc.ci, msg)
		}
	}
}

// TestStartSkipsWithoutBinaryOutsideCI runs Start with an empty PATH and
// CI unset: the subtest is skipped, not failed.
func TestStartSkipsWithoutBinaryOutsideCI(t *testing.T) {
	t.Setenv("PATH", "")
	t.Setenv("CI", "")
	var skipped bool
	t.Run("start", func(t *testing.T) {
		defer func() { skipped = t.Skipped() }()
		Start(t)
		t.Error("Start returned without etcd on PATH")
	})
	if !skipped {
		t.Fatal("Start without etcd on PATH and CI unset did not skip")
	}
}

// TestStartReportsEarlyExit starts etcd on a data directory that is a
// file: etcd exits, and start says so at once (not after startTimeout)
// with etcd's own complaint in the log.
func TestStartReportsEarlyExit(t *testing.T) {
	s := Start(t)
	s.Stop()
	s.dataDir = filepath.Join(t.TempDir(), "not-a-dir")
	if err := os.WriteFile(s.dataDir, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	err := s.start()
	if !errors.Is(err, errExited) {
		t.Fatalf("start on a file as data dir = %v, want errExited", err)
	}
	if d := time.Since(began); d >= startTimeout {
		t.Fatalf("start took %v to notice etcd's exit", d)
	}
	if !strings.Contains(s.log(), "not a directory") {
		t.Fatalf("etcd's log does not say its data dir is not a directory:\n%s", s.log())
	}
}

// errRecorder is t with Errorf recorded instead of failing t.
type errRecorder struct {
	testing.TB
	errs []string
}

func (r *errRecorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

// TestStopReportsCrash kills etcd behind the Server's back: Stop fails
// the test, saying etcd exited on its own and how.
func TestStopReportsCrash(t *testing.T) {
	s := Start(t)
	rec := &errRecorder{TB: t}
	s.t = rec
	p := s.proc
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-p.done
	s.Stop()
	s.t = t
	if len(rec.errs) != 1 || !strings.Contains(rec.errs[0], "etcd exited before Stop") || !strings.Contains(rec.errs[0], "killed") {
		t.Fatalf("Stop after a crash reported %q, want one error saying etcd exited before Stop (killed)", rec.errs)
	}
}

// TestStartRetriesATakenPort makes the first ports Start picks include one
// another listener holds: etcd cannot bind it and exits, and Start picks
// new ports and serves.
func TestStartRetriesATakenPort(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	takenPort := taken.Addr().(*net.TCPAddr).Port
	calls := 0
	pickPorts = func(n int) ([]int, error) {
		calls++
		ports, err := freePorts(n)
		if calls == 1 && err == nil {
			ports[0] = takenPort
		}
		return ports, err
	}
	defer func() { pickPorts = freePorts }()
	s := Start(t)
	if calls != 2 {
		t.Fatalf("Start picked ports %d times, want 2", calls)
	}
	if want := fmt.Sprintf("http://127.0.0.1:%d", takenPort); s.Endpoints()[0] == want {
		t.Fatalf("Start serves on the taken port %s", want)
	}
	cli := client(t, s)
	if _, err := cli.Put(ctx(t), "k", "v"); err != nil {
		t.Fatal(err)
	}
}
