package config

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/sluicerpc/sluice/config/internal/schemagen"
)

var update = flag.Bool("update", false, "rewrite schema.json and the reference in docs/operations.md")

const (
	schemaFile = "schema.json"
	docsFile   = "../docs/operations.md"
	refBegin   = "<!-- BEGIN configuration reference: generated from config/schema.json by `go generate ./config`; do not edit -->\n"
	refEnd     = "<!-- END configuration reference -->\n"
)

func generator() *schemagen.Generator {
	return &schemagen.Generator{
		Root:   reflect.TypeFor[Document](),
		SrcDir: ".",
		ID:     "https://github.com/sluicerpc/sluice/config/schema.json",
		Title:  "sluice configuration document, version 1",
		Special: map[reflect.Type]schemagen.Special{
			durationType: {Schema: func(bool) map[string]any {
				return map[string]any{"type": "string", "pattern": `^(0|([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+$`, "x-type": "duration"}
			}},
			sizeType: {Schema: func(signed bool) map[string]any {
				integer := map[string]any{"type": "integer", "minimum": 0}
				t := "size"
				if signed {
					integer = map[string]any{"type": "integer"}
					t = "size (a negative integer allowed)"
				}
				return map[string]any{"oneOf": []any{integer, map[string]any{"type": "string", "pattern": `^[0-9]+ ?(B|KiB|MiB|GiB|TiB)$`}}, "x-type": t}
			}},
		},
		Extra: map[reflect.Type]func(map[string]any){
			reflect.TypeFor[Limit](): limitSchema,
		},
	}
}

// limitSchema states which parameters each kind requires and takes.
func limitSchema(def map[string]any) {
	def["required"] = []string{"kind"}
	var all []any
	for _, kind := range slices.Sorted(func(yield func(string) bool) {
		for k := range kindParams {
			if !yield(k) {
				return
			}
		}
	}) {
		takes := kindParams[kind]
		var required []string
		for _, p := range takes {
			if p != "continuous" {
				required = append(required, p)
			}
		}
		all = append(all, map[string]any{
			"if":   map[string]any{"properties": map[string]any{"kind": map[string]any{"const": kind}}, "required": []string{"kind"}},
			"then": map[string]any{"required": required, "propertyNames": map[string]any{"enum": append([]string{"kind"}, takes...)}},
		})
	}
	def["allOf"] = all
}

func generated(t *testing.T) (schema []byte, reference string) {
	t.Helper()
	schema, err := generator().Generate()
	if err != nil {
		t.Fatal(err)
	}
	reference, err = schemagen.Markdown(schema)
	if err != nil {
		t.Fatal(err)
	}
	return schema, reference
}

// TestGenerated fails when schema.json or the reference in
// docs/operations.md is out of date with the types; go generate (or
// go test -run TestGenerated -update) rewrites both.
func TestGenerated(t *testing.T) {
	schema, reference := generated(t)
	docs, err := os.ReadFile(docsFile)
	if err != nil {
		t.Fatal(err)
	}
	before, rest, ok1 := strings.Cut(string(docs), refBegin)
	_, after, ok2 := strings.Cut(rest, refEnd)
	if !ok1 || !ok2 {
		t.Fatalf("%s has no configuration reference markers", docsFile)
	}
	newDocs := before + refBegin + "\n" + reference + refEnd + after
	if *update {
		if err := os.WriteFile(schemaFile, schema, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(docsFile, []byte(newDocs), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	committed, err := os.ReadFile(schemaFile)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(committed, schema) {
		t.Errorf("%s is out of date with the types: run go generate ./config", schemaFile)
	}
	if string(docs) != newDocs {
		t.Errorf("the configuration reference in %s is out of date: run go generate ./config", docsFile)
	}
}

// TestReferenceCoversSchema: every property of every object of the schema
// has a row in the reference of docs/operations.md, under its type's
// section.
func TestReferenceCoversSchema(t *testing.T) {
	var schema map[string]any
	data, err := os.ReadFile(schemaFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &schema); err != nil {
		t.Fatal(err)
	}
	docs, err := os.ReadFile(docsFile)
	if err != nil {
		t.Fatal(err)
	}
	sections := map[string]string{}
	for _, s := range strings.Split(string(docs), "\n#### ")[1:] {
		name, body, _ := strings.Cut(s, "\n")
		sections[name] = body
	}
	defs := schema["$defs"].(map[string]any)
	defs["Document"] = schema
	n := 0
	for name, d := range defs {
		body, ok := sections[name]
		if !ok {
			t.Errorf("docs: no section for %s", name)
			continue
		}
		for key := range d.(map[string]any)["properties"].(map[string]any) {
			n++
			if !strings.Contains(body, "\n| `"+key+"` |") {
				t.Errorf("docs: section %s has no row for %s", name, key)
			}
		}
	}
	if n < 40 {
		t.Fatalf("only %d properties in the schema", n)
	}
}
