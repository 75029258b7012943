// Package schemagen generates the JSON Schema of the configuration
// document from its Go types, and the configuration reference of
// docs/operations.md from that schema. It reads the types by reflection
// (document keys from yaml tags, defaults from default tags, enums from
// enum tags, negative integers allowed by signed tags) and their doc
// comments from the package source, so the schema states what the
// decoder does. It is used by config's tests (go generate refreshes the
// committed files), never by programs.
package schemagen

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
)

// Special gives the schema of a type that is not generated from its
// structure (a Duration, a Size), and a short name for its type in the
// reference.
type Special struct {
	Schema func(signed bool) map[string]any
	Name   string
}

// Generator holds what Generate needs.
type Generator struct {
	// Root is the document type.
	Root reflect.Type
	// SrcDir holds the package's source, for doc comments.
	SrcDir string
	// Special schemas by type.
	Special map[reflect.Type]Special
	// Extra adds to the schema of a struct type's definition (for
	// constraints the types cannot say, such as which parameters a kind
	// takes).
	Extra map[reflect.Type]func(def map[string]any)
	// ID and Title of the schema.
	ID, Title string

	docs map[string]string // "Type" and "Type.Field" -> doc comment
	defs map[string]any
}

// Generate returns the schema, indented JSON with a final newline.
func (g *Generator) Generate() ([]byte, error) {
	if err := g.readDocs(); err != nil {
		return nil, err
	}
	g.defs = map[string]any{}
	root := g.structDef(g.Root)
	root["$schema"] = "https://json-schema.org/draft/2020-12/schema"
	root["$id"] = g.ID
	root["title"] = g.Title
	root["$defs"] = g.defs
	out, err := json.MarshalIndent(root, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}

func (g *Generator) readDocs() error {
	fset := token.NewFileSet()
	matches, err := filepath.Glob(filepath.Join(g.SrcDir, "*.go"))
	if err != nil {
		return err
	}
	var files []*ast.File
	for _, m := range matches {
		if strings.HasSuffix(m, "_test.go") {
			continue
		}
		src, err := os.ReadFile(m)
		if err != nil {
			return err
		}
		f, err := parser.ParseFile(fset, m, src, parser.ParseComments)
		if err != nil {
			return err
		}
		files = append(files, f)
	}
	pkg, err := doc.NewFromFiles(fset, files, "x", doc.PreserveAST)
	if err != nil {
		return err
	}
	g.docs = map[string]string{}
	for _, t := range pkg.Types {
		g.docs[t.Name] = clean(t.Doc)
		for _, spec := range t.Decl.Specs {
			ts, ok := spec.(*ast.TypeSpec)
			if !ok {
				continue
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				continue
			}
			for _, f := range st.Fields.List {
				for _, n := range f.Names {
					if f.Doc != nil {
						g.docs[t.Name+"."+n.Name] = clean(f.Doc.Text())
					}
				}
			}
		}
	}
	return nil
}

// clean joins a doc comment's lines into one paragraph per blank line.
func clean(s string) string {
	paras := strings.Split(strings.TrimSpace(s), "\n\n")
	for i, p := range paras {
		paras[i] = strings.Join(strings.Fields(p), " ")
	}
	return strings.Join(paras, "\n\n")
}

// fieldKey is the document key of f, "" if none.
func fieldKey(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	k, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	return k
}

func (g *Generator) structDef(t reflect.Type) map[string]any {
	props := map[string]any{}
	var required []string
	var order []string
	for f := range t.Fields() {
		key := fieldKey(f)
		if key == "" {
			continue
		}
		s := g.schema(f.Type, f.Tag.Get("signed") == "true")
		if d := g.docs[t.Name()+"."+f.Name]; d != "" {
			s["description"] = d
		}
		for _, bound := range []string{"minimum", "maximum"} {
			if v := f.Tag.Get(bound); v != "" {
				n, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					panic(fmt.Sprintf("schemagen: %s.%s: %s tag %q", t.Name(), f.Name, bound, v))
				}
				s[bound] = n
			}
		}
		if enum := f.Tag.Get("enum"); enum != "" {
			var vals []any
			for _, v := range strings.Split(enum, ",") {
				if n, err := strconv.Atoi(v); err == nil && f.Type.Kind() == reflect.Int {
					vals = append(vals, n)
				} else {
					vals = append(vals, v)
				}
			}
			s["enum"] = vals
		}
		if def, ok := f.Tag.Lookup("default"); ok {
			s["x-default"] = def
			if def == "required" {
				required = append(required, key)
			}
		}
		props[key] = s
		order = append(order, key)
	}
	def := map[string]any{"type": "object", "additionalProperties": false, "properties": props, "x-order": order}
	if d := g.docs[t.Name()]; d != "" {
		def["description"] = d
	}
	if len(required) > 0 {
		def["required"] = required
	}
	if extra := g.Extra[t]; extra != nil {
		extra(def)
	}
	return def
}

func (g *Generator) schema(t reflect.Type, signed bool) map[string]any {
	if sp, ok := g.Special[t]; ok {
		return sp.Schema(signed)
	}
	switch t.Kind() {
	case reflect.Pointer:
		return g.schema(t.Elem(), signed)
	case reflect.Struct:
		if _, ok := g.defs[t.Name()]; !ok {
			g.defs[t.Name()] = nil // placeholder against recursion
			g.defs[t.Name()] = g.structDef(t)
		}
		return map[string]any{"$ref": "#/$defs/" + t.Name()}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": g.schema(t.Elem(), false)}
	case reflect.Slice:
		return map[string]any{"type": "array", "items": g.schema(t.Elem(), false)}
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int64:
		if signed {
			return map[string]any{"type": "integer"}
		}
		return map[string]any{"type": "integer", "minimum": 0}
	case reflect.Float64:
		return map[string]any{"type": "number"}
	}
	panic(fmt.Sprintf("schemagen: unsupported type %v", t))
}
