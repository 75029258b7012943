package config

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// decoder fills Go values from a yaml.Node tree strictly, recording every
// problem (with its path and position) and the position of every value.
type decoder struct {
	ps        *problems
	b         budget // what aliases and merge keys may make of the document
	limit     int    // the budget's nodes at the start, for its problem
	pathLimit int    // the budget's path bytes at the start
}

// newDecoder returns a decoder for a document of size bytes.
func newDecoder(ps *problems, size int) *decoder {
	b := newBudget(size)
	return &decoder{ps: ps, b: b, limit: b.nodes, pathLimit: b.pathBytes}
}

var (
	durationType = reflect.TypeFor[Duration]()
	sizeType     = reflect.TypeFor[Size]()
)

// fieldKey returns the document key of a struct field, "" for a field the
// document does not have.
func fieldKey(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	k, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	return k
}

// keysOf lists the document keys of struct type t.
func keysOf(t reflect.Type) []string {
	var out []string
	for f := range t.Fields() {
		if k := fieldKey(f); k != "" {
			out = append(out, k)
		}
	}
	return out
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a sequence"
	case yaml.ScalarNode:
		switch n.ShortTag() {
		case "!!str":
			return fmt.Sprintf("the string %q", n.Value)
		case "!!int":
			return "the number " + n.Value
		case "!!float":
			return "the floating-point number " + n.Value
		case "!!bool":
			return "the boolean " + n.Value
		case "!!null":
			return "null"
		}
		return fmt.Sprintf("%s %q", n.ShortTag(), n.Value)
	}
	return "an unsupported node"
}

// value decodes n into v (settable) at path. signed allows a negative
// integer.
func (d *decoder) value(n *yaml.Node, v reflect.Value, path string, signed bool) {
	for n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	if !d.visit(n, path) || !d.record(n, path) {
		return
	}
	d.ps.pos[path] = position{n.Line, n.Column}
	if isNull(n) {
		return // absent: the zero value
	}
	if tag := n.ShortTag(); n.Kind == yaml.MappingNode && tag != "!!map" || n.Kind == yaml.SequenceNode && tag != "!!seq" {
		d.ps.add(path, "%s tagged %s: a mapping takes no tag but !!map, a sequence none but !!seq", kindName(&yaml.Node{Kind: n.Kind}), tag)
		return
	}
	bad := func(want string) { d.ps.add(path, "want %s, got %s", want, kindName(n)) }
	switch v.Type() {
	case durationType:
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
			bad("a duration string such as \"250ms\"")
			return
		}
		dur, err := parseDuration(n.Value)
		if err != nil {
			d.ps.add(path, "%v", err)
			return
		}
		v.SetInt(int64(dur))
		return
	case sizeType:
		if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!str" {
			s, err := parseSize(n.Value)
			if err != nil {
				d.ps.add(path, "%v", err)
				return
			}
			v.SetInt(int64(s))
			return
		}
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
			bad("a size (bytes, or a string such as \"64KiB\")")
			return
		}
		i, ok := d.integer(n, path, math.MaxInt64)
		if ok && i < 0 && !signed {
			d.ps.add(path, "must not be negative, got %d", i)
			return
		}
		v.SetInt(i)
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		e := reflect.New(v.Type().Elem())
		d.value(n, e.Elem(), path, signed)
		v.Set(e)
	case reflect.Struct:
		d.mapping(n, v, path)
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			bad("a mapping")
			return
		}
		m := reflect.MakeMapWithSize(v.Type(), len(n.Content)/2)
		seen := map[string]bool{}
		for _, kv := range d.pairs(n, path) {
			kn, vn := kv[0], kv[1]
			if kn.Kind != yaml.ScalarNode || kn.ShortTag() != "!!str" {
				d.ps.addAt(path, position{kn.Line, kn.Column}, "keys must be strings, got %s", kindName(kn))
				continue
			}
			p := fmt.Sprintf("%s[%q]", path, kn.Value)
			if seen[kn.Value] {
				d.ps.addAt(p, position{kn.Line, kn.Column}, "key %q given twice", kn.Value)
				continue
			}
			seen[kn.Value] = true
			e := reflect.New(v.Type().Elem()).Elem()
			d.value(vn, e, p, false)
			m.SetMapIndex(reflect.ValueOf(kn.Value), e)
		}
		v.Set(m)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			bad("a sequence")
			return
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, en := range n.Content {
			d.value(en, s.Index(i), fmt.Sprintf("%s[%d]", path, i), false)
		}
		v.Set(s)
	case reflect.String:
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
			bad("a string")
			return
		}
		v.SetString(n.Value)
	case reflect.Bool:
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" {
			bad("true or false")
			return
		}
		var b bool
		if err := n.Decode(&b); err != nil {
			d.ps.add(path, "%v", err)
			return
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int64:
		if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!float" && n.Style&yaml.TaggedStyle == 0 {
			// An integer too large for int64 is resolved as a float.
			if _, err := strconv.ParseInt(strings.ReplaceAll(n.Value, "_", ""), 0, 64); errors.Is(err, strconv.ErrRange) {
				d.ps.add(path, "integer %q out of range", n.Value)
				return
			}
		}
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
			bad("an integer")
			return
		}
		most := int64(math.MaxInt64)
		if v.Kind() == reflect.Int {
			most = math.MaxInt
		}
		i, ok := d.integer(n, path, most)
		if !ok {
			return
		}
		if i < 0 && !signed {
			d.ps.add(path, "must not be negative, got %d", i)
			return
		}
		v.SetInt(i)
	case reflect.Float64:
		if n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!float" && n.ShortTag() != "!!int") {
			bad("a number")
			return
		}
		f, err := strconv.ParseFloat(strings.ReplaceAll(n.Value, "_", ""), 64)
		if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
			d.ps.add(path, "want a finite number, got %q", n.Value)
			return
		}
		v.SetFloat(f)
	default:
		panic("config: unsupported field type " + v.Type().String())
	}
}

// integer reads an !!int scalar within [-most-1, most].
func (d *decoder) integer(n *yaml.Node, path string, most int64) (int64, bool) {
	var i int64
	if err := n.Decode(&i); err != nil {
		if _, perr := strconv.ParseInt(strings.ReplaceAll(n.Value, "_", ""), 0, 64); errors.Is(perr, strconv.ErrRange) {
			d.ps.add(path, "integer %q out of range", n.Value)
		} else {
			d.ps.add(path, "want an integer, got %q tagged !!int", n.Value)
		}
		return 0, false
	}
	if i > most || i < -most-1 {
		d.ps.add(path, "integer %q out of range", n.Value)
		return 0, false
	}
	return i, true
}

// mapping decodes a mapping node into struct v: unknown and repeated keys
// are problems.
func (d *decoder) mapping(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.MappingNode {
		d.ps.add(path, "want a mapping, got %s", kindName(n))
		return
	}
	t := v.Type()
	seen := map[string]bool{}
	for _, kv := range d.pairs(n, path) {
		kn, vn := kv[0], kv[1]
		at := position{kn.Line, kn.Column}
		if kn.Kind != yaml.ScalarNode || kn.ShortTag() != "!!str" {
			d.ps.addAt(path, at, "keys must be strings, got %s", kindName(kn))
			continue
		}
		p := fieldPath(path, kn.Value)
		f, ok := fieldByKey(t, kn.Value)
		if !ok {
			d.ps.addAt(p, at, "unknown field %q (known: %s)", kn.Value, strings.Join(keysOf(t), ", "))
			continue
		}
		if seen[kn.Value] {
			d.ps.addAt(p, at, "field %q given twice", kn.Value)
			continue
		}
		seen[kn.Value] = true
		d.value(vn, v.FieldByIndex(f.Index), p, f.Tag.Get("signed") == "true")
	}
}

// fieldPath is the path of key under path: path.key for a key that is a
// plain identifier (every field the document knows), path["key"] quoted
// otherwise, so that no key can change the shape of a path or of the line
// that prints it.
func fieldPath(path, key string) string {
	plain := key != ""
	for i := 0; i < len(key); i++ {
		if c := key[i]; !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			plain = false
			break
		}
	}
	switch {
	case !plain:
		return path + "[" + strconv.Quote(key) + "]"
	case path == "":
		return key
	}
	return path + "." + key
}

// fieldByKey returns the field of struct type t whose document key is key.
// The empty key names no field: fieldKey is "" for the fields the document
// does not have (unexported ones among them), and matching those made the
// 7-byte document {"": {}} panic in reflect (found by FuzzParse).
func fieldByKey(t reflect.Type, key string) (reflect.StructField, bool) {
	if key == "" {
		return reflect.StructField{}, false
	}
	for f := range t.Fields() {
		if fieldKey(f) == key {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// pairs returns the key and value nodes of mapping n with YAML merge keys
// ("<<: *defaults") expanded: a key of n itself overrides a merged one,
// and of several merged mappings the earlier wins, as YAML specifies.
// Repeated keys of n itself are kept, for the caller to report. A merge
// cycle, merges nested too deep and an expansion over the budget are
// problems that stop the decoding (expansion.go); pairs then returns
// what it has.
func (d *decoder) pairs(n *yaml.Node, path string) [][2]*yaml.Node {
	return d.expand(n, n, path, false)
}

// expand is pairs for mapping n, reached through at (n itself, or the
// merge key's alias of it); merged says n is a merge key's source.
func (d *decoder) expand(n, at *yaml.Node, path string, merged bool) [][2]*yaml.Node {
	if !d.enter(n, at, path, merged) {
		return nil
	}
	defer d.leave(n, merged)
	var own, more [][2]*yaml.Node
	has := map[string]bool{}
	merges := 0
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := n.Content[i], n.Content[i+1]
		if !d.visit(kn, path) {
			return nil
		}
		at := position{kn.Line, kn.Column}
		if kn.Kind == yaml.ScalarNode && kn.ShortTag() == "!!merge" {
			if merges++; merges > 1 {
				d.ps.addAt(path, at, "a second merge key (<<) in one mapping: merge several mappings with one, <<: [*a, *b]")
				continue
			}
			more = append(more, d.mergeSources(vn, path)...)
			continue
		}
		if merged {
			// A merged mapping's own keys are checked here, as the
			// mapping or struct that receives them checks its own.
			switch {
			case kn.Kind != yaml.ScalarNode || kn.ShortTag() != "!!str":
				d.ps.addAt(path, at, "keys must be strings, got %s (in a merged mapping)", kindName(kn))
				continue
			case has[kn.Value]:
				d.ps.addAt(path, at, "key %q given twice (in a merged mapping)", kn.Value)
				continue
			}
		}
		own = append(own, [2]*yaml.Node{kn, vn})
		if kn.Kind == yaml.ScalarNode {
			has[kn.Value] = true
		}
	}
	out := own
	for _, kv := range more {
		if kv[0].Kind == yaml.ScalarNode && !has[kv[0].Value] {
			has[kv[0].Value] = true
			out = append(out, kv)
		}
	}
	return out
}

// mergeSources returns the pairs a merge key's value brings: one mapping
// or a sequence of mappings (aliases followed), each expanded in turn.
func (d *decoder) mergeSources(v *yaml.Node, path string) [][2]*yaml.Node {
	at := v
	for v.Kind == yaml.AliasNode {
		v = v.Alias
	}
	switch v.Kind {
	case yaml.MappingNode:
		return d.expand(v, at, path, true)
	case yaml.SequenceNode:
		var out [][2]*yaml.Node
		for _, e := range v.Content {
			at := e
			for e.Kind == yaml.AliasNode {
				e = e.Alias
			}
			if e.Kind != yaml.MappingNode {
				d.ps.addAt(path, position{e.Line, e.Column}, "a merge key (<<) takes mappings, got %s", kindName(e))
				continue
			}
			out = append(out, d.expand(e, at, path, true)...)
			if d.b.exhausted {
				return nil
			}
		}
		return out
	}
	d.ps.addAt(path, position{v.Line, v.Column}, "a merge key (<<) takes a mapping or a sequence of mappings, got %s", kindName(v))
	return nil
}
