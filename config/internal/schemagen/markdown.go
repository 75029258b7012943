package schemagen

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Markdown renders the reference of a schema Generate produced: one
// section per object definition, in the order the document reaches them,
// each with the paths where it appears and a table of its fields (key,
// type, default, meaning).
func Markdown(schema []byte) (string, error) {
	var root map[string]any
	if err := json.Unmarshal(schema, &root); err != nil {
		return "", err
	}
	defs, _ := root["$defs"].(map[string]any)
	r := &renderer{defs: defs, at: map[string][]string{}}
	r.visit("Document", root, "")
	var b strings.Builder
	for _, name := range r.order {
		def := r.def(name)
		fmt.Fprintf(&b, "#### %s\n\n", name)
		if d, _ := def["description"].(string); d != "" {
			b.WriteString(d + "\n\n")
		}
		var paths []string
		for _, p := range r.at[name] {
			if p == "" {
				p = "the document"
			} else {
				p = "`" + p + "`"
			}
			paths = append(paths, p)
		}
		fmt.Fprintf(&b, "At: %s.\n\n", strings.Join(paths, ", "))
		b.WriteString("| Field | Type | Default | Meaning |\n|---|---|---|---|\n")
		props, _ := def["properties"].(map[string]any)
		for _, key := range keys(def) {
			p, _ := props[key].(map[string]any)
			def, _ := p["x-default"].(string)
			desc, _ := p["description"].(string)
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", key, typeName(p), cell(def), cell(desc))
		}
		b.WriteString("\n")
	}
	return b.String(), nil
}

type renderer struct {
	defs  map[string]any
	order []string
	at    map[string][]string
}

func (r *renderer) def(name string) map[string]any {
	d, _ := r.defs[name].(map[string]any)
	return d
}

// visit records that definition name (whose schema is def) appears at
// path, and visits its fields (the schema has no cycles).
func (r *renderer) visit(name string, def map[string]any, path string) {
	if r.at[name] == nil {
		r.order = append(r.order, name)
	}
	r.at[name] = append(r.at[name], path)
	if name == "Document" {
		r.defs["Document"] = def
	}
	props, _ := def["properties"].(map[string]any)
	for _, key := range keys(def) {
		p, _ := props[key].(map[string]any)
		child := key
		if path != "" {
			child = path + "." + key
		}
		r.follow(p, child)
	}
}

func (r *renderer) follow(p map[string]any, path string) {
	if ref, ok := p["$ref"].(string); ok {
		name := strings.TrimPrefix(ref, "#/$defs/")
		r.visit(name, r.def(name), path)
		return
	}
	switch p["type"] {
	case "object":
		if ap, ok := p["additionalProperties"].(map[string]any); ok {
			r.follow(ap, path+".<name>")
		}
	case "array":
		if it, ok := p["items"].(map[string]any); ok {
			r.follow(it, path+"[]")
		}
	}
}

// keys lists a definition's property keys in the order of its Go fields.
func keys(def map[string]any) []string {
	var out []string
	order, _ := def["x-order"].([]any)
	for _, k := range order {
		out = append(out, k.(string))
	}
	return out
}

func typeName(p map[string]any) string {
	if t, ok := p["x-type"].(string); ok {
		return t
	}
	if ref, ok := p["$ref"].(string); ok {
		name := strings.TrimPrefix(ref, "#/$defs/")
		return fmt.Sprintf("[%s](#%s)", name, strings.ToLower(name))
	}
	if enum, ok := p["enum"].([]any); ok {
		var vals []string
		for _, v := range enum {
			vals = append(vals, fmt.Sprintf("`%v`", v))
		}
		return "one of " + strings.Join(vals, ", ")
	}
	switch p["type"] {
	case "integer":
		lo, hasLo := p["minimum"]
		hi, hasHi := p["maximum"]
		switch {
		case hasLo && hasHi:
			return "integer " + number(lo) + " to " + number(hi)
		case hasLo:
			return "integer ≥ " + number(lo)
		}
		return "integer"
	case "object":
		ap, _ := p["additionalProperties"].(map[string]any)
		return "map of name → " + typeName(ap)
	case "array":
		it, _ := p["items"].(map[string]any)
		return "list of " + typeName(it)
	}
	s, _ := p["type"].(string)
	return s
}

// cell escapes text for a table cell.
func cell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "\n\n", "<br><br>")
}

// number prints a schema's bound as written (JSON numbers decode to
// float64: 1048576, not 1.048576e+06).
func number(v any) string {
	if f, ok := v.(float64); ok {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return fmt.Sprint(v)
}
