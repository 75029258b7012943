package main

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// scrape GETs http://addr/metrics and parses it with the Prometheus text
// parser.
func scrape(t *testing.T, addr string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(body))
	require.NoError(t, err, "%s", body)
	return mfs
}

// labeled returns the metric of family name whose labels hold kv (pairs).
func labeled(t *testing.T, mfs map[string]*dto.MetricFamily, name string, kv ...string) *dto.Metric {
	t.Helper()
	mf, ok := mfs[name]
	require.True(t, ok, "no family %s", name)
next:
	for _, m := range mf.GetMetric() {
		for i := 0; i < len(kv); i += 2 {
			found := false
			for _, lp := range m.GetLabel() {
				if lp.GetName() == kv[i] && lp.GetValue() == kv[i+1] {
					found = true
				}
			}
			if !found {
				continue next
			}
		}
		return m
	}
	t.Fatalf("%s has no series with %v", name, kv)
	return nil
}

// scrapeUntil scrapes until done holds, for at most 10 s.
func scrapeUntil(t *testing.T, addr string, done func(map[string]*dto.MetricFamily) bool) map[string]*dto.MetricFamily {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		mfs := scrape(t, addr)
		if done(mfs) || time.Now().After(deadline) {
			return mfs
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// serve -metrics serves the server's metrics as Prometheus text: the call
// duration histogram by method and code, the refusals by reason, the
// current generation, the connections and the configuration reloads.
func TestServeMetricsScrape(t *testing.T) {
	fakeHangups(t)
	path := filepath.Join(t.TempDir(), "sluice.yaml")
	saveConfig(t, path, rateOneDoc)
	maddr := freeAddr(t)
	addr, out := serveInBackground(t, "-config", path, "-metrics", maddr)
	assert.Contains(t, out.String(), "sluice serve: metrics at http://"+maddr+"/metrics\n")

	code, _, stderr := runCommand("call", "-addr", addr, "-data", "one")
	require.Equal(t, exitOK, code, stderr)
	code, _, _ = runCommand("call", "-addr", addr, "-data", "two")
	require.Equal(t, exitFail, code, "the token bucket holds one call an hour")

	// A call is recorded right after its answer is written, and a
	// connection leaves the live gauge when the server reads its close:
	// scrape until both calls are in and both closes are seen (a bound
	// only a broken server reaches).
	mfs := scrapeUntil(t, maddr, func(mfs map[string]*dto.MetricFamily) bool {
		var n uint64
		for _, m := range mfs["rpc_server_call_duration_seconds"].GetMetric() {
			n += m.GetHistogram().GetSampleCount()
		}
		live := -1.0
		for _, m := range mfs["sluice_server_connections_live"].GetMetric() {
			live = m.GetGauge().GetValue()
		}
		return n == 2 && live == 0
	})
	ok := labeled(t, mfs, "rpc_server_call_duration_seconds", "rpc_method", "echo/Say", "rpc_response_status_code", "OK", "rpc_system_name", "sluice")
	assert.Equal(t, uint64(1), ok.GetHistogram().GetSampleCount())
	refused := labeled(t, mfs, "rpc_server_call_duration_seconds", "rpc_method", "echo/Say", "rpc_response_status_code", "ResourceExhausted", "error_type", "ResourceExhausted")
	assert.Equal(t, uint64(1), refused.GetHistogram().GetSampleCount())
	assert.Equal(t, 1.0, labeled(t, mfs, "sluice_server_calls_refused_total", "reason", "rate").GetCounter().GetValue())
	assert.Equal(t, 1.0, labeled(t, mfs, "sluice_admission_generation").GetGauge().GetValue(), "the file's generation")
	assert.Equal(t, 1.0, labeled(t, mfs, "sluice_config_reloads_total", "source", "file", "outcome", "applied").GetCounter().GetValue())
	assert.Equal(t, 2.0, labeled(t, mfs, "sluice_server_connections_admitted_total").GetCounter().GetValue())
	// Each "sluice call" closed its connection before it returned. (The
	// gauge was read at once and bounded by 1, a race: a loaded machine's
	// fresh-clone run read 2, the server having seen neither close yet.)
	assert.Equal(t, 0.0, labeled(t, mfs, "sluice_server_connections_live").GetGauge().GetValue())
}

// A -metrics address that cannot be bound stops serve at the start,
// naming the flag.
func TestServeMetricsAddressInUse(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	code, stdout, stderr := runCommand("serve", "-addr", freeAddr(t), "-metrics", l.Addr().String())
	assert.Equal(t, exitFail, code)
	assert.Contains(t, stderr, "sluice serve: -metrics "+l.Addr().String()+": listen tcp "+l.Addr().String()+": bind: address already in use\n")
	assert.NotContains(t, stdout, "listening on")
}

// With -metrics-token-file a scrape needs the token: without it 401 (and
// the connection closes), with it the metrics. The flag alone, without
// -metrics, stops serve at the start.
func TestServeMetricsToken(t *testing.T) {
	fakeHangups(t)
	tokenPath := filepath.Join(t.TempDir(), "metrics.token")
	require.NoError(t, os.WriteFile(tokenPath, []byte("a-metrics-token-of-some-length\n"), 0o600))
	maddr := freeAddr(t)
	serveInBackground(t, "-metrics", maddr, "-metrics-token-file", tokenPath)

	resp, err := http.Get("http://" + maddr + "/metrics")
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	assert.True(t, resp.Close)

	req, err := http.NewRequest(http.MethodGet, "http://"+maddr+"/metrics", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer a-metrics-token-of-some-length")
	resp, err = http.DefaultClient.Do(req)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, string(body), "sluice_server_connections_live")

	code, _, stderr := runCommand("serve", "-addr", freeAddr(t), "-metrics-token-file", tokenPath)
	assert.Equal(t, exitFail, code)
	assert.Contains(t, stderr, "-metrics-token-file needs -metrics")
}
