package config_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/sluicerpc/sluice/config"
)

// A key of the document cannot forge a line: control characters of a key
// are escaped in the problem's path and reason, so the error prints one
// line per problem whatever the document holds (a key holding
// "\nconfig: input.yaml:1:1: server: looks fine" made a second line in
// the log and in the admin API's problem list). Keys that are not plain
// identifiers are quoted in paths.
func TestAKeyCannotForgeALine(t *testing.T) {
	doc := "version: 1\nserver:\n  \"x\\nconfig: input.yaml:1:1: server: looks fine\\u2028\": 1\n  \"a.b\": 2\n"
	_, err := config.Parse([]byte(doc), "input.yaml")
	checkProblems(t, err, []want{
		{`server["x\nconfig: input.yaml:1:1: server: looks fine\u2028"]`, 3, 3, `unknown field "x\nconfig: input.yaml:1:1: server: looks fine\u2028"`},
		{`server["a.b"]`, 4, 3, `unknown field "a.b"`},
	})
	if lines := strings.Count(err.Error(), "\n") + 1; lines != 2 {
		t.Fatalf("%d lines for 2 problems:\n%s", lines, err)
	}
	if strings.ContainsRune(err.Error(), '\u2028') {
		t.Fatalf("a line separator got through: %q", err)
	}
}

// A document lists at most 100 problems, then says how many more there
// were; a megabyte key is cut in its path and reason.
func TestProblemsAreBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("version: 1\nserver:\n")
	for i := range 1000 {
		fmt.Fprintf(&b, "  unknown_%d: 1\n", i)
	}
	_, err := config.Parse([]byte(b.String()), "")
	var ce *config.Error
	if !errors.As(err, &ce) {
		t.Fatalf("error = %v", err)
	}
	if len(ce.Problems) != 101 {
		t.Fatalf("%d problems, want 100 and a last one counting the rest", len(ce.Problems))
	}
	if last := ce.Problems[100]; last.Reason != "and 900 more problems (at most 100 are listed)" || last.Line != 0 {
		t.Fatalf("last problem = %+v", last)
	}

	long := strings.Repeat("k", 1<<20)
	_, err = config.Parse([]byte("version: 1\nserver:\n  ? "+long+"\n  : 1\n"), "")
	if !errors.As(err, &ce) || len(ce.Problems) != 1 {
		t.Fatalf("error = %.300v", err)
	}
	p := ce.Problems[0]
	if len(p.Path) > 300 || len(p.Reason) > 300 || !strings.Contains(p.Reason, "bytes)") {
		t.Fatalf("a 1 MiB key gave a path of %d bytes and a reason of %d: %.300s", len(p.Path), len(p.Reason), p.Reason)
	}
}

// Inside a merged mapping a repeated key and a non-string key are
// problems, as they are in any mapping; so is a second merge key in one
// mapping, and a tag that contradicts a node's kind. Messages say what is
// wrong: "!!int abc" is not an integer, it is not out of range.
func TestMergedMappingsAndTagsAreChecked(t *testing.T) {
	for _, tc := range []struct {
		doc  string
		want want
	}{
		{"version: 1\nx: &m {per_server: 1, per_server: 2}\nserver:\n  calls: {<<: *m}\n", want{"server.calls", 2, 23, `key "per_server" given twice (in a merged mapping)`}},
		{"version: 1\nx: &m {[a]: 1}\nserver:\n  calls: {<<: *m}\n", want{"server.calls", 2, 8, "keys must be strings, got a sequence (in a merged mapping)"}},
		{"version: 1\nserver:\n  calls: {<<: {per_server: 1}, <<: {per_connection: 2}}\n", want{"server.calls", 3, 32, "a second merge key (<<)"}},
		{"version: 1\nserver: !!seq {}\n", want{"server", 2, 9, "a mapping tagged !!seq"}},
		{"version: !!float 1\n", want{"version", 1, 10, "want an integer, got the floating-point number 1"}},
		{"version: 1\nserver:\n  calls:\n    per_server: !!int abc\n", want{"server.calls.per_server", 4, 17, `want an integer, got "abc" tagged !!int`}},
		{"version: 1\nserver:\n  calls:\n    per_server: 99999999999999999999\n", want{"server.calls.per_server", 4, 17, `integer "99999999999999999999" out of range`}},
	} {
		_, err := config.Parse([]byte(tc.doc), "")
		var wants []want
		if strings.Contains(tc.doc, "\nx:") {
			wants = append(wants, want{"x", 2, 1, `unknown field "x"`})
		}
		checkProblems(t, err, append(wants, tc.want))
	}
}

// The empty key is an unknown field like any other: it matched the
// document's unexported fields, and {"": {}} panicked in reflect (found by
// FuzzParse in its first seconds).
func TestTheEmptyKeyIsAnUnknownField(t *testing.T) {
	_, err := config.Parse([]byte(`{"": {}}`), "")
	checkProblems(t, err, []want{{`[""]`, 1, 2, `unknown field ""`}})
	_, err = config.Parse([]byte("version: 1\nserver:\n  \"\": 1\n"), "")
	checkProblems(t, err, []want{{`server[""]`, 3, 3, `unknown field ""`}})
}
