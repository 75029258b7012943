package config_test

import (
	"bytes"
	"encoding/json"
	"os"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v3"

	"github.com/sluicerpc/sluice/config"
)

func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open("schema.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("schema.json")
	if err != nil {
		t.Fatalf("schema.json does not compile: %v", err)
	}
	return s
}

// asJSON reads a YAML document as the JSON value a schema validates.
func asJSON(t *testing.T, src string) any {
	t.Helper()
	var v any
	if err := yaml.Unmarshal([]byte(src), &v); err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	out, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// The schema accepts the example documents.
func TestSchemaAcceptsExamples(t *testing.T) {
	s := compileSchema(t)
	for _, path := range []string{"testdata/example.yaml", "testdata/example.json"} {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Validate(asJSON(t, string(src))); err != nil {
			t.Errorf("%s: %v", path, err)
		}
	}
}

// The schema rejects what Parse rejects for its shape, so that an
// editor or a CI lint with the schema catches the same mistakes.
func TestSchemaAgreesWithParse(t *testing.T) {
	s := compileSchema(t)
	const lim = "version: 1\nserver:\n  admission:\n    global:\n      limits:\n"
	for name, src := range map[string]string{
		"no version":            "server: {}\n",
		"unknown field":         "version: 1\nserver:\n  calls:\n    per_conn: 3\n",
		"wrong type":            "version: 1\nserver:\n  calls:\n    per_server: many\n",
		"negative count":        "version: 1\nserver:\n  connections:\n    max_connections: -1\n",
		"duration as number":    "version: 1\nclient:\n  endpoint_policy:\n    mode: circuit_breaker\n    circuit_breaker:\n      break_duration: 10\n",
		"bad duration":          "version: 1\nclient:\n  endpoint_policy:\n    mode: circuit_breaker\n    circuit_breaker:\n      break_duration: 10 s\n",
		"decimal size":          "version: 1\nserver:\n  streams:\n    window: 64KB\n",
		"negative size":         "version: 1\nserver:\n  streams:\n    window: -1\n",
		"unknown kind":          lim + "        - kind: leaky\n",
		"no kind":               lim + "        - limit: 3\n",
		"parameter of another":  lim + "        - {kind: concurrency, limit: 3, window: 1s}\n",
		"missing parameter":     lim + "        - {kind: sliding_window, limit: 3, window: 1s}\n",
		"rule without limits":   "version: 1\nserver:\n  admission:\n    services:\n      echo: {}\n",
		"partition no selector": "version: 1\nserver:\n  admission:\n    partition: {max_partitions: 1, idle_timeout: 1s, limits: [{kind: concurrency, limit: 1}]}\n",
		"unknown mode":          "version: 1\nclient:\n  endpoint_policy:\n    mode: throttle\n",
	} {
		doc, perr := config.Parse([]byte(src), "")
		if perr == nil {
			_, perr = doc.ServerSettings(selectors)
		}
		if perr == nil {
			t.Errorf("%s: the config package accepts it", name)
		}
		if err := s.Validate(asJSON(t, src)); err == nil {
			t.Errorf("%s: the schema accepts it (config says: %v)", name, perr)
		}
	}
	// And accepts the valid spellings of sizes and durations.
	for _, src := range []string{
		"version: 1\nserver:\n  streams:\n    window: 1 MiB\n",
		"version: 1\nserver:\n  streams:\n    window: 65536\n",
		"version: 1\nserver:\n  compression:\n    policy: {min_size: -1}\n",
		lim + "        - {kind: token_bucket, token_limit: 1, tokens_per_period: 1, period: 1m30.5s}\n",
		lim + "        - {kind: fixed_window, limit: 1, window: 1.5h}\n",
	} {
		doc, err := config.Parse([]byte(src), "")
		if err == nil {
			_, err = doc.ServerSettings(selectors)
		}
		if err != nil {
			t.Errorf("%q: config rejects it: %v", src, err)
		}
		if err := s.Validate(asJSON(t, src)); err != nil {
			t.Errorf("%q: the schema rejects it: %v", src, err)
		}
	}
}
