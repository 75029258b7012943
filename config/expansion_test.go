package config_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/sluicerpc/sluice/config"
)

// TestAMergeCycleIsAProblem: a merge key that refers to the mapping that
// holds it (29 bytes) overflowed the decoder's stack: a fatal error no
// recover can catch, in the admin API's dry run, a file reload, startup
// and every server of an etcd fleet at once. It is a problem located at
// the alias, directly or through a sequence of merged mappings, at the
// top level or nested.
func TestAMergeCycleIsAProblem(t *testing.T) {
	for _, tc := range []struct {
		doc  string
		want want
	}{
		{"version: 1\nserver: &s\n  <<: *s\n", want{"server", 3, 7, "a cycle"}},
		{"version: 1\nserver: &s\n  <<: [{}, *s]\n", want{"server", 3, 12, "a cycle"}},
		{"version: 1\nserver:\n  calls: &c\n    <<: [*c]\n", want{"server.calls", 4, 10, "a cycle"}},
		{"&d\nversion: 1\n<<: *d\n", want{"", 3, 5, "a cycle"}},
	} {
		_, err := config.Parse([]byte(tc.doc), "")
		checkProblems(t, err, []want{tc.want})
	}
}

// anchorChain writes n anchors a0..a(n-1) as the elements of the
// unknown field x, each merging the previous one; merges lists, per
// element after the first, the aliases it merges.
func anchorChain(n int, merges func(i int) string) string {
	var b strings.Builder
	b.WriteString("x:\n  - &a0 {}\n")
	for i := 1; i < n; i++ {
		fmt.Fprintf(&b, "  - &a%d {<<: %s}\n", i, merges(i))
	}
	return b.String()
}

// TestMergesNestAtMost64Deep: a chain of anchors, each merging the
// previous one, overflowed the stack at 600,000 without any cycle. A
// merge nested deeper than 64 is a problem at the alias that goes one
// too deep, and the decoding stops there.
func TestMergesNestAtMost64Deep(t *testing.T) {
	const n = 20000
	doc := anchorChain(n, func(i int) string { return fmt.Sprintf("*a%d", i-1) })
	doc += fmt.Sprintf("version: 1\nserver: {<<: *a%d}\n", n-1)
	_, err := config.Parse([]byte(doc), "")
	// server merges a(n-1), which merges a(n-2), ...: the 65th merge is
	// the alias written in a(n-64), on line 2+(n-64) ("  - &aK {<<: *a").
	checkProblems(t, err, []want{
		{"x", 1, 1, `unknown field "x"`},
		{"server", 2 + (n - 64), 13 + len(fmt.Sprint(n-64)), "nested deeper than 64"},
	})

	// 64 deep is fine.
	doc = anchorChain(64, func(i int) string { return fmt.Sprintf("*a%d", i-1) })
	doc = strings.Replace(doc, "&a0 {}", "&a0 {per_server: 3}", 1)
	doc += "version: 1\nserver:\n  calls: {<<: *a63}\n"
	_, err = config.Parse([]byte(doc), "")
	checkProblems(t, err, []want{{"x", 1, 1, `unknown field "x"`}})
}

// TestExpansionIsBoundedByTheDocumentsSize: reuse beyond 4 nodes per
// byte (or beyond 64 bytes of field paths per byte, whichever comes
// first) is a problem that stops the decoding, located where the budget
// ran out: a merge that doubles at every level (491 bytes took 8 s), and
// aliases alone, N services each aliasing one rule of N limits (N², 57 KB
// took 9.8 s and 660 MB).
func TestExpansionIsBoundedByTheDocumentsSize(t *testing.T) {
	doubling := anchorChain(40, func(i int) string { return fmt.Sprintf("[*a%d, *a%d]", i-1, i-1) })
	doubling += "version: 1\nserver:\n  calls: {<<: *a39}\n"

	const n = 1000
	var b strings.Builder
	b.WriteString("version: 1\nx: &rule\n  limits:\n")
	for range n {
		b.WriteString("    - {kind: concurrency, limit: 4}\n")
	}
	b.WriteString("server:\n  admission:\n    services:\n")
	for i := range n {
		fmt.Fprintf(&b, "      s%d: *rule\n", i)
	}
	for name, doc := range map[string]string{"doubling merges": doubling, "N aliases of N limits": b.String()} {
		_, err := config.Parse([]byte(doc), "")
		ce, ok := err.(*config.Error)
		if !ok {
			t.Fatalf("%s: error = %v, want a *config.Error", name, err)
		}
		found := 0
		for _, p := range ce.Problems {
			if strings.Contains(p.Reason, "expands beyond") || strings.Contains(p.Reason, "field paths exceed") {
				found++
				if p.Line == 0 {
					t.Errorf("%s: the budget's problem has no line: %+v", name, p)
				}
			}
		}
		if found != 1 {
			t.Errorf("%s: %d budget problems, want 1:\n%v", name, found, err)
		}
		if len(ce.Problems) > 3 {
			t.Errorf("%s: %d problems: decoding went on after the budget", name, len(ce.Problems))
		}
	}

	// The same documents with little reuse are decoded: 40 services of
	// one aliased rule of 40 limits.
	b.Reset()
	b.WriteString("version: 1\nx: &rule\n  limits:\n")
	for range 40 {
		b.WriteString("    - {kind: concurrency, limit: 4}\n")
	}
	b.WriteString("server:\n  admission:\n    services:\n")
	for i := range 40 {
		fmt.Fprintf(&b, "      s%d: *rule\n", i)
	}
	_, err := config.Parse([]byte(b.String()), "")
	checkProblems(t, err, []want{{"x", 2, 1, `unknown field "x"`}})
}

// The field paths the decoder records are bounded by the document's size:
// a 100 KiB service name holding 1,000 limits made 431 MB of paths (each
// value's path repeats the name). It is a problem that stops the decoding.
func TestFieldPathsAreBoundedByTheDocumentsSize(t *testing.T) {
	var b strings.Builder
	b.WriteString("version: 1\nserver:\n  admission:\n    services:\n      ? " + strings.Repeat("s", 100<<10) + "\n      : limits:\n")
	for range 1000 {
		b.WriteString("          - {kind: concurrency, limit: 4}\n")
	}
	_, err := config.Parse([]byte(b.String()), "")
	ce, ok := err.(*config.Error)
	if !ok {
		t.Fatalf("error = %.300v", err)
	}
	found := false
	for _, p := range ce.Problems {
		found = found || strings.Contains(p.Reason, "field paths exceed")
	}
	if !found {
		t.Fatalf("no path budget problem in %d problems: %.500v", len(ce.Problems), err)
	}
}
