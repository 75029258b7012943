package filesource_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/control"
	"github.com/sluicerpc/sluice/control/filesource"
	"github.com/sluicerpc/sluice/server"
)

// bound is how long a test waits for what must happen before it fails;
// nothing waits for it to pass.
const bound = 10 * time.Second

// harness is a Source watching a file of a real directory, with a
// debounce the test ends (fire) and the results of its reads (next).
type harness struct {
	t       *testing.T
	srv     *server.Server
	ctl     *control.Controller
	path    string
	src     *filesource.Source
	quiet   chan time.Time         // what the Source's debounce waits on
	armed   chan time.Duration     // each call of Options.After
	results chan filesource.Result // each Options.Handled
	log     *syncBuffer
}

// newHarness starts a Source on path, laid out by the test, with o's
// logger, timer and hook replaced by the harness's.
func newHarness(t *testing.T, path string, o filesource.Options) (*harness, error) {
	t.Helper()
	h := &harness{t: t, srv: newServer(t), path: path, quiet: make(chan time.Time), armed: make(chan time.Duration, 1000),
		results: make(chan filesource.Result, 1000), log: &syncBuffer{}}
	logger := slog.New(slog.NewTextHandler(h.log, nil))
	h.ctl = control.New(h.srv, control.Options{Logger: logger})
	o.Logger = logger
	o.After = func(d time.Duration) <-chan time.Time { h.armed <- d; return h.quiet }
	o.Handled = func(r filesource.Result) { h.results <- r }
	src, err := filesource.Start(context.Background(), h.ctl, path, o)
	if err != nil {
		return h, err
	}
	h.src = src
	t.Cleanup(func() { require.NoError(t, src.Close()) })
	return h, nil
}

// start is newHarness on a file holding doc, which must apply.
func start(t *testing.T, doc string) *harness {
	t.Helper()
	path := filepath.Join(t.TempDir(), "sluice.yaml")
	writeFile(t, path, doc)
	h, err := newHarness(t, path, filesource.Options{})
	require.NoError(t, err)
	return h
}

// fire ends the debounce the Source is waiting on: it blocks until an
// event concerning the file has armed it.
func (h *harness) fire() {
	h.t.Helper()
	select {
	case h.quiet <- time.Now():
	case <-time.After(bound):
		h.t.Fatalf("no event concerning %s armed the debounce within %v", h.path, bound)
	}
}

// next returns the result of the Source's next read.
func (h *harness) next() filesource.Result {
	h.t.Helper()
	select {
	case r := <-h.results:
		return r
	case <-time.After(bound):
		h.t.Fatalf("the source read nothing within %v", bound)
		return filesource.Result{}
	}
}

// perConnection is the setting the documents of these tests vary.
func (h *harness) perConnection() int { return h.srv.CallCapacity().PerConnection }

// doc is a valid document whose calls.per_connection is n.
func doc(n int) string {
	return fmt.Sprintf("version: 1\nserver:\n  admission:\n    global:\n      limits: [{kind: concurrency, limit: 2}]\n  calls: {per_connection: %d, per_server: 64}\n", n)
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte(data), 0o644))
}

// replace writes data as an editor saves: a new file beside path,
// renamed over it.
func replace(t *testing.T, path, data string) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".swp")
	writeFile(t, tmp, data)
	require.NoError(t, os.Rename(tmp, path))
}

func newServer(t *testing.T) *server.Server {
	t.Helper()
	mux := server.NewMux()
	mux.HandleRaw("echo", "Say", func(_ context.Context, req []byte) ([]byte, error) { return req, nil })
	srv, err := server.New(mux, server.Options{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}

// syncBuffer is a bytes.Buffer safe for the Source's goroutine and the
// test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// count returns how many lines contain sub.
func (s *syncBuffer) count(sub string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Count(s.b.String(), sub)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
