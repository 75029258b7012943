package config_test

import (
	"errors"
	"io/fs"
	"testing"

	"github.com/sluicerpc/sluice/config"
)

const adm = "version: 1\nserver:\n  admission:\n"

func TestServerSettingsErrors(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		wants     []want
	}{
		{"no limit at all", adm + "    queue: {}\n", []want{{"server.admission", 4, 5, "at least one limit is required"}}},
		{"rule without limits", adm + "    services:\n      echo: {}\n", []want{
			{"server.admission", 4, 5, "at least one limit is required"},
			{`server.admission.services["echo"].limits`, 5, 13, "at least one limit"},
		}},
		{"limit out of range", adm + "    methods:\n      \"a/b\":\n        limits:\n          - kind: concurrency\n            limit: 0\n", []want{
			{`server.admission.methods["a/b"].limits[0].limit`, 8, 20, "must be between 1 and"},
		}},
		{"required parameter", adm + "    global:\n      limits:\n        - kind: token_bucket\n          token_limit: 10\n", []want{
			{"server.admission.global.limits[0].period", 6, 11, "required for kind token_bucket"},
			{"server.admission.global.limits[0].tokens_per_period", 6, 11, "required for kind token_bucket"},
		}},
		{"window parameter mapped back", adm + "    global:\n      limits:\n        - kind: sliding_window\n          limit: 10\n          window: 1s\n          segments: 3\n", []want{
			{"server.admission.global.limits[0].segments", 9, 21, "must divide window"},
		}},
		{"fixed window limit mapped back", adm + "    global:\n      limits:\n        - kind: fixed_window\n          limit: 0\n          window: 1s\n", []want{
			{"server.admission.global.limits[0].limit", 7, 18, ""},
		}},
		{"two concurrency limits", adm + "    global:\n      limits:\n        - {kind: concurrency, limit: 1}\n        - {kind: concurrency, limit: 2}\n", []want{
			{"server.admission.global.limits[1]", 7, 11, "at most one concurrency limit; server.admission.global.limits[0] is one already"},
		}},
		{"two rate limits", adm + "    global:\n      limits:\n        - {kind: fixed_window, limit: 1, window: 1s}\n        - {kind: token_bucket, token_limit: 1, tokens_per_period: 1, period: 1s}\n", []want{
			{"server.admission.global.limits[1]", 7, 11, "at most one rate limit"},
		}},
		{"queue half set", adm + "    global: {limits: [{kind: concurrency, limit: 1}]}\n    queue:\n      max_queued_calls: 3\n", []want{
			{"server.admission.queue", 6, 7, "all zero (no waiting) or all positive"},
		}},
		{"one-way queueing without a queue", adm + "    global: {limits: [{kind: concurrency, limit: 1}]}\n    queue:\n      queue_one_way_calls: true\n", []want{
			{"server.admission.queue.queue_one_way_calls", 6, 28, "requires queueing"},
		}},
		{"unknown selector", adm + "    partition:\n      selector: region\n      max_partitions: 10\n      idle_timeout: 1m\n      limits: [{kind: concurrency, limit: 1}]\n", []want{
			{"server.admission.partition.selector", 5, 17, `unknown selector "region" (registered: "tenant")`},
		}},
		{"partition incomplete", adm + "    partition:\n      limits: [{kind: concurrency, limit: 1}]\n", []want{
			{"server.admission.partition.idle_timeout", 5, 7, "required: positive"},
			{"server.admission.partition.max_partitions", 5, 7, "required: at least 1"},
			{"server.admission.partition.selector", 5, 7, "required"},
		}},
		{"max_partitions too large", adm + "    partition:\n      selector: tenant\n      max_partitions: 4611686018427387904\n      idle_timeout: 1m\n      limits: [{kind: concurrency, limit: 1}]\n", []want{
			{"server.admission.partition.max_partitions", 6, 23, "at most 1048576 (about 0.5 KB per key), got 4611686018427387904"},
		}},
		{"call capacity too large", "version: 1\nserver:\n  calls:\n    per_server: 3000000\n", []want{
			{"server.calls.per_server", 4, 17, "must be at most 2097151"},
		}},
		{"handshakes above connections", "version: 1\nserver:\n  connections:\n    max_connections: 10\n    max_handshakes: 20\n    max_handshakes_per_address: 30\n", []want{
			{"server.connections.max_handshakes", 5, 21, "at most max_connections (10)"},
			{"server.connections.max_handshakes_per_address", 6, 33, "at most max_handshakes (20)"},
		}},
		{"stream window too small", "version: 1\nserver:\n  streams:\n    window: 1KiB\n", []want{
			{"server.streams.window", 4, 13, "must be in [64KiB"},
		}},
		{"codecs", "version: 1\nserver:\n  compression:\n    codecs: [zstd, lz4, zstd, identity]\n", []want{
			{"server.compression.codecs[1]", 4, 20, `unknown codec "lz4"`},
			{"server.compression.codecs[2]", 4, 25, `listed twice`},
			{"server.compression.codecs[3]", 4, 31, `identity needs no profile`},
		}},
		{"policy percent", "version: 1\nserver:\n  compression:\n    methods:\n      \"a/b\": {min_saving_percent: 100}\n", []want{
			{`server.compression.methods["a/b"].min_saving_percent`, 5, 35, "must be in [0, 99]"},
		}},
		{"max decoded size", "version: 1\nserver:\n  compression:\n    max_decoded_size: 4GiB\n", []want{
			{"server.compression.max_decoded_size", 4, 23, "at most 4294967295"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc, err := config.Parse([]byte(tc.doc), "test.yaml")
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			s, err := doc.ServerSettings(selectors)
			if s.Admission != nil {
				t.Errorf("ServerSettings returned settings with its error")
			}
			checkProblems(t, err, tc.wants)
		})
	}
}

func TestClientSettingsErrors(t *testing.T) {
	doc, err := config.Parse([]byte("version: 1\nclient:\n  endpoint_policy:\n    mode: circuit_breaker\n    circuit_breaker:\n      failure_ratio: 1.5\n"), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, err = doc.ClientSettings()
	checkProblems(t, err, []want{{"client.endpoint_policy.circuit_breaker.failure_ratio", 6, 22, "must be in (0, 1]"}})
}

// A document built in Go is checked the same way; its problems have no
// position.
func TestServerSettingsOfAGoDocument(t *testing.T) {
	doc := &config.Document{Version: 1, Server: &config.Server{
		Calls:     &config.Calls{PerServer: 3_000_000},
		Admission: &config.Admission{Global: &config.Rule{Limits: []config.Limit{{Kind: "leaky"}}}},
	}}
	_, err := doc.ServerSettings(nil)
	checkProblems(t, err, []want{
		{"server.admission.global.limits[0].kind", 0, 0, `unknown limit kind "leaky"`},
		{"server.calls.per_server", 0, 0, "must be at most 2097151"},
	})
	if got := err.Error(); got != "config: server.admission.global.limits[0].kind: unknown limit kind \"leaky\"\nconfig: server.calls.per_server: must be at most 2097151, got 3000000" {
		t.Errorf("Error() = %q", got)
	}
}

func TestLoadMissingFile(t *testing.T) {
	if _, err := config.Load("testdata/no-such-file.yaml"); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Load of a missing file: %v, want fs.ErrNotExist", err)
	}
}
