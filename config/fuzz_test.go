package config_test

import (
	"errors"
	"os"
	"runtime"
	"strings"
	"testing"

	"github.com/sluicerpc/sluice/config"
)

// FuzzParse: config.Parse never panics nor overflows its stack on any
// input, reports at most 100 problems plus one that counts the rest, each
// on one line of bounded length, and allocates in proportion to the
// input (at most 1 KiB per byte plus 64 MiB, as the process sees it: the
// decoder's node and path budgets bound its work). The seeds are the
// example documents and the shapes of issue 26: merge cycles, chains,
// doubling merges, aliased rules, long keys, control characters.
func FuzzParse(f *testing.F) {
	for _, name := range []string{"testdata/example.yaml", "testdata/example.json"} {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{
		"version: 1\nserver: &s\n  <<: *s\n",
		"version: 1\nserver: &s\n  <<: [{}, *s]\n",
		"x:\n  - &a0 {}\n  - &a1 {<<: *a0}\n  - &a2 {<<: [*a1, *a1]}\n  - &a3 {<<: [*a2, *a2]}\nversion: 1\nserver: {<<: *a3}\n",
		"version: 1\nx: &rule\n  limits:\n    - {kind: concurrency, limit: 4}\nserver:\n  admission:\n    services:\n      a: *rule\n      b: *rule\n",
		"version: 1\nserver:\n  \"x\\nconfig: forged\": 1\n",
		"version: 1\nx: &m {per_server: 1, per_server: 2}\nserver:\n  calls: {<<: *m}\n",
		"version: !!float 1\nserver: !!seq {}\n",
		"version: 1\nserver:\n  admission:\n    methods:\n      \"echo/Say\":\n        limits: [{kind: token_bucket, rate: 5, burst: 10, per: 1s}]\n",
		"{\"version\": 1, \"server\": {\"calls\": {\"per_server\": 64}}}",
		"",
		"\x00\xff",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := config.Parse(data, "fuzz.yaml")
		runtime.ReadMemStats(&after)
		if grown, most := after.TotalAlloc-before.TotalAlloc, uint64(1024*len(data)+64<<20); grown > most {
			t.Fatalf("Parse of %d bytes allocated %d bytes (most %d)", len(data), grown, most)
		}
		if err == nil {
			return
		}
		var ce *config.Error
		if !errors.As(err, &ce) {
			t.Fatalf("error %T is not a *config.Error: %v", err, err)
		}
		if len(ce.Problems) > 101 {
			t.Fatalf("%d problems", len(ce.Problems))
		}
		for _, p := range ce.Problems {
			if strings.ContainsAny(p.Path+p.Reason, "\n\r\u2028\u2029") || len(p.Path) > 300 || len(p.Reason) > 700 {
				t.Fatalf("problem not printable on one bounded line: %q / %q", p.Path, p.Reason)
			}
		}
	})
}
