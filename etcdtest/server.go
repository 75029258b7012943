package etcdtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
)

const (
	// startTimeout bounds how long Start and Restart wait for etcd to
	// serve; past it the test fails with etcd's log. Generous: a busy
	// 2-core machine running -race tests next to it.
	startTimeout = 30 * time.Second
	// stopTimeout bounds how long Stop waits after SIGTERM before it kills
	// etcd.
	stopTimeout = 10 * time.Second
	// startAttempts is how many times Start picks new ports when etcd
	// could not bind the ones it was given.
	startAttempts = 3
	// logTail is how much of etcd's log a failure message shows.
	logTail = 16 << 10
	// memberName is the single member's name.
	memberName = "etcdtest"
)

// Server is one etcd server, a child process of the test, with one member
// listening on 127.0.0.1. Its methods are meant for the test's goroutine
// (Restart fails the test through t); Endpoints may be called from any
// goroutine.
type Server struct {
	t         testing.TB
	bin       string
	dataDir   string
	logPath   string
	clientURL string
	peerURL   string

	mu   sync.Mutex
	proc *process // nil while stopped
}

// process is one run of the etcd binary.
type process struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once the process has exited and been reaped
	err  error         // cmd.Wait's result, set before done is closed
}

// Start runs etcd in a new directory under t.TempDir() on free loopback
// client and peer ports and returns once a Get through the etcd client
// succeeds. It fails the test, with etcd's log, when etcd does not serve
// within 30s or exits first. At t's cleanup the server is stopped (Stop).
//
// When the etcd binary is not on PATH, Start calls t.Fatal if the
// environment variable CI is true and t.Skip otherwise; both messages say
// to run scripts/deps.sh.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := exec.LookPath(binaryName)
	if err != nil {
		fatal, msg := missingVerdict(os.Getenv, err)
		if fatal {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	dir := t.TempDir() // removed after Stop: cleanups run last-in first-out
	s := &Server{
		t:       t,
		bin:     bin,
		dataDir: filepath.Join(dir, "data"),
		logPath: filepath.Join(dir, "etcd.log"),
	}
	t.Cleanup(s.Stop)
	for attempt := 1; ; attempt++ {
		ports, err := pickPorts(2)
		if err != nil {
			t.Fatal(err)
		}
		s.clientURL = fmt.Sprintf("http://127.0.0.1:%d", ports[0])
		s.peerURL = fmt.Sprintf("http://127.0.0.1:%d", ports[1])
		logStart := s.logSize()
		err = s.start()
		if err == nil {
			return s
		}
		inUse := strings.Contains(s.logFrom(logStart), "address already in use")
		if attempt == startAttempts || !errors.Is(err, errExited) || !inUse {
			t.Fatalf("%v\netcd's log (%s):\n%s", err, s.logPath, s.log())
		}
		// A port was taken between freePorts and etcd's bind: start over
		// with new ports and an empty data directory (the old one names
		// the old peer URL).
		if err := os.RemoveAll(s.dataDir); err != nil {
			t.Fatal(err)
		}
	}
}

// Endpoints returns the client URLs, for clientv3.Config.Endpoints. They
// stay the same across Restart.
func (s *Server) Endpoints() []string { return []string{s.clientURL} }

// Stop stops etcd: SIGTERM, then SIGKILL if it has not exited within 10s.
// It returns once the process has exited and been reaped, so its ports are
// free. Stopping a stopped server does nothing. If etcd had exited on its
// own before Stop, the test fails with its log: a test's etcd never
// crashes unnoticed.
func (s *Server) Stop() {
	s.mu.Lock()
	p := s.proc
	s.proc = nil
	s.mu.Unlock()
	if p == nil {
		return
	}
	select {
	case <-p.done:
		s.t.Errorf("etcdtest: etcd exited before Stop: %v\netcd's log (%s):\n%s", p.err, s.logPath, s.log())
		return
	default:
	}
	if s.halt(p) {
		s.t.Logf("etcdtest: etcd did not exit within %v of SIGTERM and was killed", stopTimeout)
	}
}

// Restart stops etcd and starts it again with the same data directory and
// ports, and returns once it serves; the data written before survives.
// Clients keep their endpoints and reconnect. It fails the test, with
// etcd's log, when etcd does not serve again (a port taken meanwhile by
// another process, for one).
func (s *Server) Restart() {
	s.t.Helper()
	s.Stop()
	if err := s.start(); err != nil {
		s.t.Fatalf("%v\netcd's log (%s):\n%s", err, s.logPath, s.log())
	}
}

// pickPorts chooses the client and peer ports; tests replace it to make a
// port taken.
var pickPorts = freePorts

// errExited marks a start that failed because etcd exited.
var errExited = errors.New("etcdtest: etcd exited before it served")

// start runs etcd and waits until it serves; on failure etcd is stopped
// again.
func (s *Server) start() error {
	logf, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("etcdtest: opening etcd's log: %w", err)
	}
	defer logf.Close() // the child holds its own descriptor
	fmt.Fprintf(logf, "=== etcdtest: starting %s %s\n", s.bin, strings.Join(s.args(), " "))
	cmd := exec.Command(s.bin, s.args()...)
	cmd.Env = environ()
	cmd.Stdout, cmd.Stderr = logf, logf // files: no copying goroutines
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("etcdtest: starting %s: %w", s.bin, err)
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	if err := waitServing(p, s.Endpoints()); err != nil {
		s.halt(p)
		return err
	}
	s.mu.Lock()
	s.proc = p
	s.mu.Unlock()
	return nil
}

// halt ends p: SIGTERM, then SIGKILL after stopTimeout; it returns once p
// is reaped, and whether it had to kill.
func (s *Server) halt(p *process) (killed bool) {
	_ = p.cmd.Process.Signal(syscall.SIGTERM) // fails only if p already exited
	timer := time.NewTimer(stopTimeout)
	defer timer.Stop()
	select {
	case <-p.done:
		return false
	case <-timer.C:
	}
	_ = p.cmd.Process.Kill()
	<-p.done
	return true
}

// waitServing returns nil once a Get on endpoints succeeds, errExited
// (wrapped) if p exits first, and an error with the last Get's error after
// startTimeout.
func waitServing(p *process, endpoints []string) error {
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	// Cancel the wait as soon as etcd exits.
	watchDone := make(chan struct{})
	defer close(watchDone)
	go func() {
		select {
		case <-p.done:
			cancel()
		case <-watchDone:
		}
	}()
	cli, err := clientv3.New(clientConfig(endpoints))
	if err != nil {
		return fmt.Errorf("etcdtest: creating the readiness client: %w", err)
	}
	defer cli.Close()
	for {
		_, err := cli.Get(ctx, "etcdtest/ready")
		if err == nil {
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("%w: %v (last Get: %v)", errExited, p.err, err)
		default:
		}
		if ctx.Err() != nil {
			return fmt.Errorf("etcdtest: etcd did not serve within %v: last Get: %v", startTimeout, err)
		}
		// The client's own retries ended (connection refused while etcd
		// binds, no leader yet): ask again.
	}
}

// ClientConfig returns a client configuration for s: its endpoints, no
// client logging, and gRPC's reconnect backoff lowered from its 1s start
// to 10ms (at most 200ms), so a client reconnects within a fraction of a
// second of a Restart instead of a second or more later.
func (s *Server) ClientConfig() clientv3.Config { return clientConfig(s.Endpoints()) }

func clientConfig(endpoints []string) clientv3.Config {
	return clientv3.Config{
		Endpoints: endpoints,
		Logger:    zap.NewNop(),
		// gRPC's default reconnect backoff starts at 1s: etcd binds its
		// port some 100ms after it starts, so the first dial is refused
		// and the default would add a second to every Start and Restart.
		DialOptions: []grpc.DialOption{grpc.WithConnectParams(grpc.ConnectParams{
			Backoff: backoff.Config{
				BaseDelay:  10 * time.Millisecond,
				Multiplier: 1.6,
				Jitter:     0.2,
				MaxDelay:   200 * time.Millisecond,
			},
			MinConnectTimeout: time.Second,
		})},
	}
}

// args are etcd's flags: one member on loopback, logging to stderr. The
// election timeout is 100ms instead of 1s: a restarted member waits one
// election timeout before it makes itself leader, and a member alone has
// no peer to lose leadership to, so a short one only shortens every
// Restart (about 1.5s to 0.15s here).
func (s *Server) args() []string {
	return []string{
		"--name", memberName,
		"--data-dir", s.dataDir,
		"--listen-client-urls", s.clientURL,
		"--advertise-client-urls", s.clientURL,
		"--listen-peer-urls", s.peerURL,
		"--initial-advertise-peer-urls", s.peerURL,
		"--initial-cluster", memberName + "=" + s.peerURL,
		"--initial-cluster-state", "new",
		"--heartbeat-interval", "10",
		"--election-timeout", "100",
		"--logger", "zap",
		"--log-outputs", "stderr",
	}
}

// environ is the test's environment without the ETCD_ and ETCDCTL_
// variables, which etcd would read as flags.
func environ() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ETCD_") && !strings.HasPrefix(kv, "ETCDCTL_") {
			env = append(env, kv)
		}
	}
	return env
}

// logSize is the length of etcd's log so far (0 before the first start).
func (s *Server) logSize() int64 {
	fi, err := os.Stat(s.logPath)
	if err != nil {
		return 0
	}
	return fi.Size()
}

// logFrom returns etcd's log from offset on: what one start wrote.
func (s *Server) logFrom(offset int64) string {
	b, err := os.ReadFile(s.logPath)
	if err != nil || int64(len(b)) < offset {
		return ""
	}
	return string(b[offset:])
}

// log returns the end of etcd's log, for failure messages.
func (s *Server) log() string {
	b, err := os.ReadFile(s.logPath)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	if len(b) > logTail {
		b = b[len(b)-logTail:]
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
		return "...\n" + string(b)
	}
	return string(b)
}
