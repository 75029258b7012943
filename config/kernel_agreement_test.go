package config_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sluicerpc/sluice/config"
	"github.com/sluicerpc/sluice/kernel"
	"github.com/sluicerpc/sluice/limiters/concurrency"
	"github.com/sluicerpc/sluice/limiters/tokenbucket"
	"github.com/sluicerpc/sluice/limiters/window"
	"github.com/sluicerpc/sluice/spi"
)

// ServerSettings rejects a limit exactly where the kernel does: for each
// limit, the document's problem names the parameter the kernel's
// CandidateError names, under the document's key, and a limit the
// document accepts is enabled by a real kernel.
func TestLimitChecksAgreeWithTheKernel(t *testing.T) {
	for _, tc := range []struct {
		name   string
		limit  string   // YAML of one global limit
		spec   spi.Spec // the same limit, as the kernel takes it
		doc    string   // "" when valid; else the document's path under limits[0]
		kernel string   // the kernel's Field, "" when valid
	}{
		{"concurrency", "{kind: concurrency, limit: 5}", concurrency.Spec(5), "", ""},
		{"concurrency zero", "{kind: concurrency, limit: 0}", concurrency.Spec(0), "limit", "Global.Limits[0].limit"},
		{"concurrency too large", "{kind: concurrency, limit: 4294967296}", concurrency.Spec(1 << 32), "limit", "Global.Limits[0].limit"},
		{"token bucket", "{kind: token_bucket, token_limit: 10, tokens_per_period: 5, period: 1s}", tokenbucket.Spec(10, 5, time.Second), "", ""},
		{"token bucket short period", "{kind: token_bucket, token_limit: 10, tokens_per_period: 5, period: 1ns}", tokenbucket.Spec(10, 5, time.Nanosecond), "period", "Global.Limits[0].period"},
		{"token bucket no tokens", "{kind: token_bucket, token_limit: 10, tokens_per_period: 0, period: 1s}", tokenbucket.Spec(10, 0, time.Second), "tokens_per_period", "Global.Limits[0].tokensPerPeriod"},
		{"fixed window", "{kind: fixed_window, limit: 10, window: 1s}", window.FixedSpec(10, time.Second), "", ""},
		{"fixed window zero", "{kind: fixed_window, limit: 0, window: 1s}", window.FixedSpec(0, time.Second), "limit", "Global.Limits[0].permitLimit"},
		{"sliding window", "{kind: sliding_window, limit: 10, window: 1s, segments: 4}", window.SlidingSpec(10, time.Second, 4), "", ""},
		{"sliding window uneven", "{kind: sliding_window, limit: 10, window: 1s, segments: 3}", window.SlidingSpec(10, time.Second, 3), "segments", "Global.Limits[0].segments"},
		{"sliding window one segment", "{kind: sliding_window, limit: 10, window: 1s, segments: 1}", window.SlidingSpec(10, time.Second, 1), "segments", "Global.Limits[0].segments"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cat kernel.CatalogBuilder
			cat.MustAdd("echo", "Say")
			k, err := kernel.New(kernel.Config{Catalog: cat.Build()})
			if err != nil {
				t.Fatal(err)
			}
			_, kerr := k.Enable(kernel.Options{Global: kernel.Rule{Limits: []spi.Spec{tc.spec}}})
			var ce *kernel.CandidateError
			switch {
			case tc.kernel == "" && kerr != nil:
				t.Fatalf("the kernel rejects the valid limit: %v", kerr)
			case tc.kernel != "" && (!errors.As(kerr, &ce) || len(ce.Problems) != 1 || ce.Problems[0].Field != tc.kernel):
				t.Fatalf("kernel: %v, want one problem at %s", kerr, tc.kernel)
			}

			src := "version: 1\nserver:\n  admission:\n    global:\n      limits:\n        - " + tc.limit + "\n"
			doc, err := config.Parse([]byte(src), "")
			if err != nil {
				t.Fatal(err)
			}
			s, err := doc.ServerSettings(nil)
			if tc.doc == "" {
				if err != nil {
					t.Fatalf("ServerSettings: %v", err)
				}
				k2, _ := kernel.New(kernel.Config{Catalog: cat.Build()})
				if _, err := k2.Enable(*s.Admission); err != nil {
					t.Fatalf("the kernel rejects the converted limit: %v", err)
				}
				return
			}
			// Located at the parameter's value: column 11 is the '{'.
			key := ", " + tc.doc + ": "
			col := 11 + strings.Index(tc.limit, key) + len(key)
			checkProblems(t, err, []want{{"server.admission.global.limits[0]." + tc.doc, 6, col, ce.Problems[0].Reason}})
		})
	}
}
