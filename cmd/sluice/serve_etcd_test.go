package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/sluicerpc/sluice/etcdtest"
)

// etcdPatience bounds the waits for what real etcd servers and sluice
// processes do; a failure, never an asserted duration.
const etcdPatience = 30 * time.Second

const etcdKey = "/sluice/fleet"

// etcdDoc is a valid document whose global concurrency limit is n.
func etcdDoc(n int) string {
	return fmt.Sprintf("version: 1\nserver:\n  admission:\n    global:\n      limits: [{kind: concurrency, limit: %d}]\n", n)
}

// etcdClient is a client of e, closed when the test ends.
func etcdClient(t *testing.T, e *etcdtest.Server) *clientv3.Client {
	t.Helper()
	cli, err := clientv3.New(e.ClientConfig())
	require.NoError(t, err)
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

func etcdPut(t *testing.T, cli *clientv3.Client, doc string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), etcdPatience)
	defer cancel()
	resp, err := cli.Put(ctx, etcdKey, doc)
	require.NoError(t, err)
	return resp.Header.Revision
}

// appliedLine matches the Controller's log line of a configuration
// applied from etcd.
var appliedLine = regexp.MustCompile(`msg="configuration applied" source=etcd origin=\S+ revision=(\d+) generation=(\d+)`)

// The value at the key is in force before serve listens.
func TestServeAppliesTheEtcdKeyBeforeListening(t *testing.T) {
	e := etcdtest.Start(t)
	rev := etcdPut(t, etcdClient(t, e), etcdDoc(2))
	stop := startServe(t, freeAddr(t), "-etcd-endpoints", strings.Join(e.Endpoints(), ","), "-etcd-key", etcdKey)
	code, out, errOut := stop()
	assert.Equal(t, exitOK, code, errOut)
	assert.Regexp(t, `listening on \S+ \(tls=false, admission=etcd, generation \d+\)`, out)
	m := appliedLine.FindStringSubmatch(errOut)
	require.NotNil(t, m, errOut)
	assert.Equal(t, strconv.FormatInt(rev, 10), m[1])
}

// etcd not answering: serve starts with the configuration it has after a
// warning, keeps reading in the background, and applies the key once etcd
// is back.
func TestServeStartsWithoutEtcdAndAppliesItLater(t *testing.T) {
	e := etcdtest.Start(t)
	cli := etcdClient(t, e)
	rev := etcdPut(t, cli, etcdDoc(2))
	e.Stop()
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	var out, errOut syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"serve", "-addr", addr, "-etcd-endpoints", e.Endpoints()[0], "-etcd-key", etcdKey, "-etcd-timeout", "200ms"}, &out, &errOut)
	}()
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "listening on") }, etcdPatience, time.Millisecond, errOut.String())
	assert.Contains(t, out.String(), "admission=from the configuration")
	assert.Contains(t, errOut.String(), "etcd: no answer within -etcd-timeout; serving the configuration in force")
	assert.NotContains(t, errOut.String(), "configuration applied")

	e.Restart()
	// Eventually: a real etcd coming back and the source's retries; the
	// bound is a failure, not a timing.
	require.Eventually(t, func() bool { return appliedLine.MatchString(errOut.String()) }, etcdPatience, 5*time.Millisecond, errOut.String())
	m := appliedLine.FindStringSubmatch(errOut.String())
	assert.Equal(t, strconv.FormatInt(rev, 10), m[1])
	cancel()
	assert.Equal(t, exitOK, <-done, errOut.String())
}

// fleetMember is one "sluice serve" process of the fleet test.
type fleetMember struct {
	cmd     *exec.Cmd
	out     syncBuffer
	applied chan appliedAt  // every configuration applied from etcd, in order
	logDone chan struct{}   // closed when its stderr reached EOF
	errLog  strings.Builder // stderr, read by the test after logDone
}

// appliedAt is one "configuration applied" line and when the test read it.
type appliedAt struct {
	revision, generation int64
	at                   time.Time
}

func startFleetMember(t *testing.T, bin string, args ...string) *fleetMember {
	t.Helper()
	m := &fleetMember{applied: make(chan appliedAt, 64), logDone: make(chan struct{})}
	m.cmd = exec.Command(bin, append([]string{"serve", "-addr", freeAddr(t)}, args...)...)
	m.cmd.Stdout = &m.out
	stderr, err := m.cmd.StderrPipe()
	require.NoError(t, err)
	require.NoError(t, m.cmd.Start())
	go m.readLog(stderr)
	t.Cleanup(func() { m.stop(t) })
	require.Eventually(t, func() bool { return strings.Contains(m.out.String(), "listening on") }, etcdPatience, time.Millisecond, "stdout: %s", m.out.String())
	return m
}

// readLog reads the member's stderr until EOF, sending each applied line
// as it arrives.
func (m *fleetMember) readLog(r io.Reader) {
	defer close(m.logDone)
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		m.errLog.WriteString(line + "\n")
		if g := appliedLine.FindStringSubmatch(line); g != nil {
			rev, _ := strconv.ParseInt(g[1], 10, 64)
			gen, _ := strconv.ParseInt(g[2], 10, 64)
			m.applied <- appliedAt{revision: rev, generation: gen, at: time.Now()}
		}
	}
}

// waitRevision returns the member's applied line of rev, failing the test
// on another revision or when none comes.
func (m *fleetMember) waitRevision(t *testing.T, i int, rev int64) appliedAt {
	t.Helper()
	select {
	case a := <-m.applied:
		require.Equal(t, rev, a.revision, "member %d applied another revision", i)
		return a
	case <-time.After(etcdPatience):
		t.Fatalf("member %d did not apply revision %d within %v", i, rev, etcdPatience)
		return appliedAt{}
	}
}

// stop ends the member with SIGTERM and waits for it; it must exit 0.
func (m *fleetMember) stop(t *testing.T) {
	if m.cmd.ProcessState != nil {
		return
	}
	_ = m.cmd.Process.Signal(syscall.SIGTERM)
	<-m.logDone
	err := m.cmd.Wait()
	assert.NoError(t, err, "stdout: %s\nstderr: %s", m.out.String(), m.errLog.String())
}

// converge puts doc and returns how long after the put returned the last
// of the members applied its revision (as the test read its log line: an
// upper bound; negative when all of them did before the put's answer
// reached the test), how long after the put began, and the revision and
// the members' generations.
func converge(t *testing.T, cli *clientv3.Client, fleet []*fleetMember, doc string) (fromReturn, fromStart time.Duration, rev int64, gens []int64) {
	t.Helper()
	start := time.Now()
	rev = etcdPut(t, cli, doc)
	put := time.Now()
	var last time.Time
	gens = make([]int64, len(fleet))
	for i, m := range fleet {
		a := m.waitRevision(t, i, rev)
		gens[i] = a.generation
		if a.at.After(last) {
			last = a.at
		}
	}
	return last.Sub(put), last.Sub(start), rev, gens
}

// Three "sluice serve" processes on one etcd key converge on every put,
// an etcd restart in the middle included; the test reports the
// convergence times, each under the 1s on loopback, measured from
// before the put (from its answer the figure can be negative: a server's
// log line may be read before the put's answer reaches the test).
func TestFleetConvergesThroughEtcd(t *testing.T) {
	bin := pluginBinary(t, "sluice", "github.com/sluicerpc/sluice/cmd/sluice")
	e := etcdtest.Start(t)
	cli := etcdClient(t, e)
	first := etcdPut(t, cli, etcdDoc(2))
	args := []string{"-etcd-endpoints", strings.Join(e.Endpoints(), ","), "-etcd-key", etcdKey}
	fleet := make([]*fleetMember, 3)
	for i := range fleet {
		fleet[i] = startFleetMember(t, bin, args...)
		fleet[i].waitRevision(t, i, first)
	}

	took, sinceStart, rev, gens := converge(t, cli, fleet, etcdDoc(3))
	t.Logf("fleet of %d converged on revision %d (generations %v) %v after the put returned (%v after it began)", len(fleet), rev, gens, took, sinceStart)
	assert.Less(t, sinceStart, time.Second, "convergence after a put (measured from before it: the stricter bound)")

	e.Restart()
	took, sinceStart, rev, gens = converge(t, cli, fleet, etcdDoc(4))
	t.Logf("after an etcd restart, fleet of %d converged on revision %d (generations %v) %v after the put returned (%v after it began)", len(fleet), rev, gens, took, sinceStart)
	assert.Less(t, sinceStart, time.Second, "convergence after a put following an etcd restart (measured from before it)")

	for _, m := range fleet {
		m.stop(t)
	}
	for i, m := range fleet {
		assert.Contains(t, m.out.String(), "sluice serve: stopped after 0 calls", "member %d", i)
		select {
		case a := <-m.applied:
			t.Errorf("member %d applied revision %d after the last put", i, a.revision)
		default:
		}
	}
}
