package uitest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/client"
	"github.com/sluicerpc/sluice/control"
	"github.com/sluicerpc/sluice/control/admin"
	"github.com/sluicerpc/sluice/server"
)

const token = "0123456789abcdef-dashboard-test"

// docLimit is a configuration whose global concurrency limit is limit,
// with a short queue: under the load below some calls are admitted, some
// queued and some refused.
func docLimit(limit int) string {
	return fmt.Sprintf(`version: 1
server:
  admission:
    global:
      limits: [{kind: concurrency, limit: %d}]
    queue:
      max_queued_calls: 2
      max_queued_bytes: 1MiB
      max_queue_delay: 50ms
`, limit)
}

// docInvalid's problem is on line 5 (a negative limit).
const docInvalid = `version: 1
server:
  admission:
    global:
      limits: [{kind: concurrency, limit: -3}]
`

// browser is the path of a Chromium, or "" if none is on PATH.
func browser() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// rig is a real server under load, its Controller, and the admin API
// (with the dashboard) on loopback.
type rig struct {
	srv *server.Server
	ctl *control.Controller
	url string
}

func newRig(t *testing.T) *rig {
	t.Helper()
	mux := server.NewMux()
	mux.HandleRaw("echo", "Slow", func(ctx context.Context, req []byte) ([]byte, error) {
		// Long enough that the calls overlap and queue: the test's
		// assertions wait for what the page shows, never for this.
		select {
		case <-time.After(5 * time.Millisecond):
		case <-ctx.Done():
		}
		return req, nil
	})
	srv, err := server.New(mux, server.Options{})
	require.NoError(t, err)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(l) }()
	t.Cleanup(func() {
		_ = srv.Close()
		assert.ErrorIs(t, <-served, server.ErrServerClosed)
	})

	ctl := control.New(srv, control.Options{})
	_, err = ctl.Apply(control.Change{Source: control.SourceFile, Origin: "test", Document: []byte(docLimit(4)), Latest: true})
	require.NoError(t, err)
	h, err := admin.NewHandler(ctl, admin.Options{Token: []byte(token), EventInterval: 100 * time.Millisecond})
	require.NoError(t, err)
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close) // after the browser (cleanups run last first): its streams end first

	// Load: workers calling in a loop until the test ends.
	ctx, cancel := context.WithCancel(context.Background())
	c, err := client.Dial(ctx, []string{l.Addr().String()}, client.Options{})
	require.NoError(t, err)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for ctx.Err() == nil {
				_, _ = c.CallRaw(ctx, "echo/Slow", []byte("hello")) // refusals are part of the load
			}
		})
	}
	t.Cleanup(func() {
		cancel()
		wg.Wait()
		_ = c.Close()
	})
	return &rig{srv: srv, ctl: ctl, url: ts.URL}
}

// text is the text of the element of sel.
func text(ctx context.Context, t *testing.T, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	require.NoError(t, err)
	return strings.TrimSpace(s)
}

// waitJS waits until the JavaScript expression cond is true.
func waitJS(ctx context.Context, t *testing.T, what, cond string) {
	t.Helper()
	wctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if _, err := chromedp.Run(wctx, chromedp.Poll[bool](cond, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(60*time.Second))); err != nil {
		page, _ := chromedp.Run(ctx, chromedp.Text(chromedp.CSS("body")))
		t.Fatalf("waiting for %s (%s): %v\npage:\n%s", what, cond, err, page)
	}
}

// The dashboard in a real browser: log in with the token, see the charts
// update under load, plan and apply a change through the editor and see
// the new generation, see an invalid document's problem with its line,
// and see a change that lost the race (412) reload the configuration.
func TestDashboardInABrowser(t *testing.T) {
	exe := browser()
	if exe == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("no chromium, chromium-browser or google-chrome on PATH (scripts/deps.sh installs Debian's chromium)")
		}
		t.Skip("no chromium, chromium-browser or google-chrome on PATH (scripts/deps.sh installs it)")
	}
	r := newRig(t)

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.WindowSize(1280, 1600),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-dev-shm-usage", true),
	)
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox)
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	defer cancelBrowser()
	// The first action starts the browser, which lives as long as bctx;
	// the later ones run under a bound.
	require.NoError(t, chromedp.Do(bctx))
	ctx, cancel := context.WithTimeout(bctx, 4*time.Minute)
	defer cancel()

	// Log in: a wrong token is refused, the right one opens the page.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.Navigate(r.url+"/ui"),
		chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), strings.Repeat("x", len(token))),
		chromedp.Click(chromedp.CSS("#login-submit")),
	))
	waitJS(ctx, t, "the refusal", `document.getElementById('login-error').textContent.includes('refused')`)
	require.NoError(t, chromedp.Do(ctx,
		chromedp.SendKeys(chromedp.CSS("#token"), token),
		chromedp.Click(chromedp.CSS("#login-submit")),
		chromedp.WaitVisible(chromedp.CSS("#app")),
	))
	waitJS(ctx, t, "generation 1", `document.getElementById('generation').textContent === '1'`)
	assert.Contains(t, text(ctx, t, "#config-doc"), "limit: 4")

	// The charts update as samples arrive, and show the load.
	waitJS(ctx, t, "samples", `Number(document.getElementById('sample-count').textContent) >= 3`)
	n0, err := strconv.Atoi(text(ctx, t, "#sample-count"))
	require.NoError(t, err)
	waitJS(ctx, t, "more samples", fmt.Sprintf(`Number(document.getElementById('sample-count').textContent) >= %d`, n0+5))
	waitJS(ctx, t, "admitted calls", `Number(document.getElementById('admitted-total').textContent) > 0`)
	waitJS(ctx, t, "the admitted rate", `[...document.querySelectorAll('#legend-admitted li b')].some(b => Number(b.textContent) > 0)`)
	waitJS(ctx, t, "the global scope's active permits", `[...document.querySelectorAll('#legend-active li')].some(li => li.dataset.series.startsWith('global'))`)
	waitJS(ctx, t, "a refusal reason", `document.querySelectorAll('#legend-refused li[data-series]').length > 0`)
	waitJS(ctx, t, "the connection state", `document.getElementById('conn-state').textContent === 'live'`)

	// Plan, then apply: the plan first, then the new generation.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.SetValue(chromedp.CSS("#editor"), docLimit(8)),
		chromedp.Click(chromedp.CSS("#plan")),
		chromedp.WaitVisible(chromedp.CSS("#plan-out")),
	))
	plan := text(ctx, t, "#plan-states")
	assert.Contains(t, plan, "4 → 8", plan)
	assert.Contains(t, text(ctx, t, "#plan-meta"), "against generation 1")
	assert.Equal(t, uint64(1), r.ctl.Generation(), "a plan changes nothing")
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#apply"))))
	waitJS(ctx, t, "generation 2", `document.getElementById('generation').textContent === '2'`)
	assert.Contains(t, text(ctx, t, "#editor-status"), "Applied: generation 2")
	waitJS(ctx, t, "the document in force", `document.getElementById('config-doc').textContent.includes('limit: 8')`)
	assert.Equal(t, uint64(2), r.ctl.Generation())
	assert.Equal(t, int64(8), r.srv.Stats().Admission.Scopes[0].Limit)

	// An invalid document: the problem with its line, nothing applied.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.SetValue(chromedp.CSS("#editor"), docInvalid),
		chromedp.Click(chromedp.CSS("#plan")),
		chromedp.WaitVisible(chromedp.CSS("#problems li")),
	))
	problem := text(ctx, t, "#problems")
	assert.Contains(t, problem, "line 5", problem)
	assert.Contains(t, text(ctx, t, "#editor-status"), "invalid")
	assert.Equal(t, uint64(2), r.ctl.Generation())

	// Take the screenshot here: charts with data, a plan's problem shown.
	shot := screenshot(ctx, t)

	// A plan made against generation 2, then another writer publishes:
	// Apply is refused (412) and the page reloads the configuration.
	require.NoError(t, chromedp.Do(ctx,
		chromedp.SetValue(chromedp.CSS("#editor"), docLimit(6)),
		chromedp.Click(chromedp.CSS("#plan")),
		chromedp.WaitVisible(chromedp.CSS("#plan-out")),
	))
	waitJS(ctx, t, "the plan", `!document.getElementById('apply').disabled`)
	_, err = r.ctl.Apply(control.Change{Source: control.SourceFile, Origin: "test", Document: []byte(docLimit(5)), Latest: true})
	require.NoError(t, err)
	require.NoError(t, chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#apply"))))
	waitJS(ctx, t, "the 412", `document.getElementById('editor-status').textContent.includes('The configuration moved')`)
	waitJS(ctx, t, "generation 3", `document.getElementById('generation').textContent === '3'`)
	assert.Equal(t, uint64(3), r.ctl.Generation(), "the refused apply changed nothing")
	assert.Equal(t, int64(5), r.srv.Stats().Admission.Scopes[0].Limit)
	t.Logf("screenshot: %s", shot)

	// Close the page before the servers: its event stream ends with it.
	cancelBrowser()
}

// screenshot writes a PNG of the whole page and returns its path.
func screenshot(ctx context.Context, t *testing.T) string {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100)) // quality 100: PNG
	require.NoError(t, err)
	require.True(t, len(png) > 8 && string(png[1:4]) == "PNG", "a PNG")
	dir := os.Getenv("SLUICE_UI_SCREENSHOT_DIR")
	if dir == "" {
		dir = t.ArtifactDir()
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		require.NoError(t, err)
	}
	path := filepath.Join(dir, "dashboard.png")
	require.NoError(t, os.WriteFile(path, png, 0o644))
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the screenshot %s was not written", path)
	}
	return path
}
