package config_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/sluicerpc/sluice/config"
	"github.com/sluicerpc/sluice/endpointpolicy"
)

// want is one expected problem: its path and position exactly, and a
// part of its reason.
type want struct {
	path         string
	line, column int
	reason       string
}

func checkProblems(t *testing.T, err error, wants []want) {
	t.Helper()
	var ce *config.Error
	if !errors.As(err, &ce) {
		t.Fatalf("error = %v (%T), want a *config.Error", err, err)
	}
	if len(ce.Problems) != len(wants) {
		t.Fatalf("%d problems, want %d:\n%v", len(ce.Problems), len(wants), err)
	}
	for i, w := range wants {
		p := ce.Problems[i]
		if p.Path != w.path || p.Line != w.line || p.Column != w.column || !strings.Contains(p.Reason, w.reason) {
			t.Errorf("problem %d = %q at %d:%d: %q\nwant %q at %d:%d containing %q", i, p.Path, p.Line, p.Column, p.Reason, w.path, w.line, w.column, w.reason)
		}
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		wants     []want
	}{
		{"empty", "", []want{{"version", 1, 1, "required"}}},
		{"no version", "server: {}\n", []want{{"version", 1, 1, "required"}}},
		{"bad version", "version: 2\n", []want{{"version", 1, 10, "unsupported version 2"}}},
		{"version as string", "version: \"1\"\n", []want{{"version", 1, 10, `want an integer, got the string "1"`}}},
		{"not a mapping", "- 1\n", []want{{"", 1, 1, "want a mapping, got a sequence"}}},
		{"unknown top-level field", "version: 1\nservers: {}\n", []want{{"servers", 2, 1, `unknown field "servers" (known: version, server, client)`}}},
		{"unknown nested field", "version: 1\nserver:\n  calls:\n    per_conn: 3\n", []want{{"server.calls.per_conn", 4, 5, `unknown field "per_conn"`}}},
		{"repeated key", "version: 1\nversion: 1\n", []want{{"version", 2, 1, "given twice"}}},
		{"wrong type", "version: 1\nserver:\n  calls:\n    per_server: many\n", []want{{"server.calls.per_server", 4, 17, `want an integer, got the string "many"`}}},
		{"negative count", "version: 1\nserver:\n  connections:\n    max_connections: -1\n", []want{{"server.connections.max_connections", 4, 22, "must not be negative, got -1"}}},
		{"bool as string", "version: 1\nserver:\n  compression:\n    disabled: \"yes\"\n", []want{{"server.compression.disabled", 4, 15, "want true or false"}}},
		{"bad duration", "version: 1\nserver:\n  admission:\n    queue:\n      max_queue_delay: 5 parsecs\n", []want{{"server.admission.queue.max_queue_delay", 5, 24, `invalid duration "5 parsecs"`}}},
		{"duration as number", "version: 1\nserver:\n  admission:\n    queue:\n      max_queue_delay: 250\n", []want{{"server.admission.queue.max_queue_delay", 5, 24, "want a duration string"}}},
		{"negative duration", "version: 1\nserver:\n  admission:\n    queue:\n      max_queue_delay: -1s\n", []want{{"server.admission.queue.max_queue_delay", 5, 24, "must not be negative"}}},
		{"negative size", "version: 1\nserver:\n  governor:\n    decoded_bytes: -5\n", []want{{"server.governor.decoded_bytes", 4, 20, "must not be negative, got -5"}}},
		{"negative size string", "version: 1\nserver:\n  governor:\n    decoded_bytes: -5MiB\n", []want{{"server.governor.decoded_bytes", 4, 20, "must not be negative"}}},
		{"decimal size unit", "version: 1\nserver:\n  streams:\n    window: 64KB\n", []want{{"server.streams.window", 4, 13, `invalid size "64KB"`}}},
		{"fractional size", "version: 1\nserver:\n  streams:\n    window: 1.5MiB\n", []want{{"server.streams.window", 4, 13, `invalid size "1.5MiB"`}}},
		{"size overflow", "version: 1\nserver:\n  streams:\n    window: 9000000TiB\n", []want{{"server.streams.window", 4, 13, "overflows"}}},
		{"limit kind unknown", "version: 1\nserver:\n  admission:\n    global:\n      limits:\n        - kind: leaky\n", []want{{"server.admission.global.limits[0].kind", 6, 17, `unknown limit kind "leaky"`}}},
		{"limit kind missing", "version: 1\nserver:\n  admission:\n    global:\n      limits:\n        - limit: 3\n", []want{{"server.admission.global.limits[0].kind", 6, 11, "required"}}},
		{"parameter of another kind", "version: 1\nserver:\n  admission:\n    methods:\n      \"a/b\":\n        limits:\n          - kind: concurrency\n            limit: 3\n            window: 1s\n", []want{{`server.admission.methods["a/b"].limits[0].window`, 9, 21, "not a parameter of kind concurrency (it takes limit)"}}},
		{"limit as string", "version: 1\nserver:\n  admission:\n    methods:\n      \"a/b\":\n        limits:\n          - kind: concurrency\n            limit: ten\n", []want{{`server.admission.methods["a/b"].limits[0].limit`, 8, 20, "want an integer"}}},
		{"repeated map key", "version: 1\nserver:\n  admission:\n    services:\n      echo: {limits: [{kind: concurrency, limit: 1}]}\n      echo: {limits: [{kind: concurrency, limit: 2}]}\n", []want{{`server.admission.services["echo"]`, 6, 7, `key "echo" given twice`}}},
		{"sequence expected", "version: 1\nserver:\n  compression:\n    codecs: zstd\n", []want{{"server.compression.codecs", 4, 13, "want a sequence"}}},
		{"unknown mode", "version: 1\nclient:\n  endpoint_policy:\n    mode: throttle\n", []want{{"client.endpoint_policy.mode", 4, 11, `unknown mode "throttle"`}}},
		{"breaker without its mode", "version: 1\nclient:\n  endpoint_policy:\n    circuit_breaker: {}\n", []want{{"client.endpoint_policy.circuit_breaker", 4, 22, "applies to mode circuit_breaker only"}}},
		{"syntax error", "version: 1\nserver: [\n", []want{{"", 2, 0, "invalid YAML"}}},
		{"two documents", "version: 1\n---\nversion: 1\n", []want{{"", 2, 1, "one document"}}},
		{"json with an unknown field", "{\"version\": 1,\n \"server\": {\"calls\": {\"per_server\": 1, \"bogus\": 2}}}\n", []want{{"server.calls.bogus", 2, 40, `unknown field "bogus"`}}},
		// Every problem is reported, in the order of the file.
		{"several problems", "version: 1\nserver:\n  calls:\n    per_server: x\n  governor:\n    decodes: -1\n  bogus: 1\n", []want{
			{"server.calls.per_server", 4, 17, "want an integer"},
			{"server.governor.decodes", 6, 14, "must not be negative"},
			{"server.bogus", 7, 3, `unknown field "bogus"`},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc, err := config.Parse([]byte(tc.doc), "test.yaml")
			if doc != nil {
				t.Errorf("Parse returned a document with its error")
			}
			checkProblems(t, err, tc.wants)
			if !strings.HasPrefix(err.Error(), "config: test.yaml:") {
				t.Errorf("Error() = %q, want it to start with the document's name", err)
			}
		})
	}
}

func TestSizes(t *testing.T) {
	for in, want := range map[string]config.Size{
		"0": 0, "1024": 1024, "\"0B\"": 0, "\"17B\"": 17, "\"64KiB\"": 64 << 10, "\"1MiB\"": 1 << 20, "\"2GiB\"": 2 << 30, "\"1TiB\"": 1 << 40, "\"3 MiB\"": 3 << 20,
	} {
		doc, err := config.Parse([]byte("version: 1\nserver:\n  governor:\n    decoded_bytes: "+in+"\n"), "")
		if err != nil {
			t.Errorf("%s: %v", in, err)
			continue
		}
		if got := doc.Server.Governor.DecodedBytes; got != want {
			t.Errorf("%s: %d, want %d", in, got, want)
		}
	}
	for _, in := range []string{"\"KiB\"", "\"1kib\"", "\"1 KB\"", "\"+1KiB\"", "\"1_000B\"", "\" 1KiB\"", "\"1  KiB\"", "\"1KiB \"", "\"99999999999999999999B\"", "\"0x10KiB\"", "1.5", "true", "\"\""} {
		if _, err := config.Parse([]byte("version: 1\nserver:\n  governor:\n    decoded_bytes: "+in+"\n"), ""); err == nil {
			t.Errorf("%s: accepted", in)
		}
	}
}

// A document with every section present but empty selects every default:
// zero settings, admission disabled.
func TestDefaults(t *testing.T) {
	for _, src := range []string{
		"version: 1\n",
		"version: 1\nserver:\nclient:\n",
		"version: 1\nserver:\n  calls: {}\n  connections: {}\n  governor: {}\n  compression: {}\n  streams: {}\nclient:\n  endpoint_policy: {}\n",
		"version: 1\nclient:\n  endpoint_policy:\n    mode: disabled\n",
	} {
		doc, err := config.Parse([]byte(src), "")
		if err != nil {
			t.Fatalf("%q: %v", src, err)
		}
		s, err := doc.ServerSettings(nil)
		if err != nil {
			t.Fatalf("%q: %v", src, err)
		}
		if !reflect.DeepEqual(s, config.ServerSettings{}) {
			t.Errorf("%q: ServerSettings = %+v, want the zero value (every default, admission disabled)", src, s)
		}
		c, err := doc.ClientSettings()
		if err != nil || c.CircuitBreaker != nil {
			t.Errorf("%q: ClientSettings = %+v, %v; want the policy disabled", src, c, err)
		}
	}
	// A circuit breaker with no options takes every default.
	doc, err := config.Parse([]byte("version: 1\nclient:\n  endpoint_policy:\n    mode: circuit_breaker\n"), "")
	if err != nil {
		t.Fatal(err)
	}
	c, err := doc.ClientSettings()
	if err != nil || c.CircuitBreaker == nil || !reflect.DeepEqual(*c.CircuitBreaker, endpointpolicy.CircuitBreakerOptions{}) {
		t.Fatalf("ClientSettings = %+v, %v; want the zero (default) breaker options", c.CircuitBreaker, err)
	}
}

// Anchors, aliases and merge keys work as YAML specifies: a key of the
// mapping overrides a merged one; errors in merged values are located
// where the value is written.
func TestAnchorsAndMerges(t *testing.T) {
	doc, err := config.Parse([]byte(`version: 1
server:
  admission:
    services:
      echo: &rule
        limits:
          - &small {kind: concurrency, limit: 4}
      ping: *rule
    methods:
      "echo/Say":
        limits:
          - <<: *small
            limit: 2
          - <<: [{kind: fixed_window, limit: 1}, {limit: 9, window: 1s}]
`), "")
	if err != nil {
		t.Fatal(err)
	}
	a := doc.Server.Admission
	if got := *a.Services["ping"].Limits[0].Limit; got != 4 {
		t.Errorf("aliased rule limit = %d, want 4", got)
	}
	say := a.Methods["echo/Say"].Limits
	if say[0].Kind != "concurrency" || *say[0].Limit != 2 {
		t.Errorf("merged limit = %s %d, want concurrency 2 (the key of the mapping wins)", say[0].Kind, *say[0].Limit)
	}
	if say[1].Kind != "fixed_window" || *say[1].Limit != 1 || say[1].Window.Std().String() != "1s" {
		t.Errorf("merged limit = %+v, want fixed_window 1 per 1s (the earlier mapping wins)", say[1])
	}
	_, err = config.Parse([]byte("version: 1\nx: &bad {per_server: nope}\nserver:\n  calls:\n    <<: *bad\n"), "")
	checkProblems(t, err, []want{
		{"x", 2, 1, `unknown field "x"`},
		{"server.calls.per_server", 2, 22, "want an integer"},
	})
	_, err = config.Parse([]byte("version: 1\nserver:\n  calls:\n    <<: 3\n"), "")
	checkProblems(t, err, []want{{"server.calls", 4, 9, "a merge key (<<) takes a mapping"}})
}
