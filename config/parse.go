package config

import (
	"bytes"
	"cmp"
	"errors"
	"io"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Parse decodes one document from data (YAML, or JSON, which is YAML).
// name names the document in errors (a file path; "" for none). Decoding
// is strict: an unknown field, a value of the wrong type, a bad duration
// or size, a negative count, a repeated key, a version other than 1 or a
// limit parameter that its kind does not take is a problem, and every
// problem is returned in one *Error, each with its field path, line and
// column. On error the *Document is nil.
//
// Parse checks the document's shape; the values' ranges and their
// consistency are checked by ServerSettings and ClientSettings.
func Parse(data []byte, name string) (*Document, error) {
	ps := &problems{pos: positions{}}
	root, err := parseNode(data)
	if err != nil {
		ps.list = append(ps.list, syntaxProblem(err))
		return nil, ps.err(name)
	}
	doc := &Document{}
	if root == nil || isNull(root) {
		ps.addAt("version", position{1, 1}, "required (the document is empty)")
		return nil, ps.err(name)
	}
	d := newDecoder(ps, len(data))
	d.value(root, reflect.ValueOf(doc).Elem(), "", false)
	if len(ps.list) == 0 {
		doc.checkShape(ps)
	}
	if err := ps.err(name); err != nil {
		return nil, err
	}
	doc.pos, doc.name = ps.pos, name
	return doc, nil
}

// Load reads and parses the document at path.
func Load(path string) (*Document, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(data, path)
}

// parseNode parses data into its single document node (nil if empty).
func parseNode(data []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, nil
		}
		return nil, err
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		if err != nil {
			return nil, err
		}
		return nil, &multiDocError{line: extra.Line}
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, nil
	}
	return doc.Content[0], nil
}

type multiDocError struct{ line int }

func (e *multiDocError) Error() string { return "a file holds one document; another starts here" }

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): `)

// syntaxProblem turns a YAML syntax error into a Problem with its line.
func syntaxProblem(err error) Problem {
	var md *multiDocError
	if errors.As(err, &md) {
		return Problem{Line: md.line, Column: 1, Reason: md.Error()}
	}
	msg := err.Error()
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return Problem{Line: line, Reason: "invalid YAML: " + strings.TrimPrefix(msg, m[0])}
	}
	return Problem{Reason: "invalid YAML: " + strings.TrimPrefix(msg, "yaml: ")}
}

// checkShape checks what the types cannot say: the version, the limit
// kinds and their parameters, the endpoint policy mode.
func (doc *Document) checkShape(ps *problems) {
	if _, ok := ps.pos["version"]; !ok {
		ps.add("version", "required (version: 1)")
	} else if doc.Version != Version {
		ps.add("version", "unsupported version %d (this program reads version %d)", doc.Version, Version)
	}
	if s := doc.Server; s != nil && s.Admission != nil {
		a := s.Admission
		if a.Global != nil {
			checkLimits(ps, "server.admission.global.limits", a.Global.Limits)
		}
		for _, name := range sortedKeys(a.Services) {
			checkLimits(ps, "server.admission.services["+strconv.Quote(name)+"].limits", a.Services[name].Limits)
		}
		for _, name := range sortedKeys(a.Methods) {
			checkLimits(ps, "server.admission.methods["+strconv.Quote(name)+"].limits", a.Methods[name].Limits)
		}
		if a.Partition != nil {
			checkLimits(ps, "server.admission.partition.limits", a.Partition.Limits)
		}
	}
	if c := doc.Client; c != nil && c.EndpointPolicy != nil {
		ep := c.EndpointPolicy
		switch ep.Mode {
		case "", "disabled":
			if ep.CircuitBreaker != nil {
				ps.add("client.endpoint_policy.circuit_breaker", "applies to mode circuit_breaker only (mode is %q)", cmp.Or(ep.Mode, "disabled"))
			}
		case "circuit_breaker":
		default:
			ps.add("client.endpoint_policy.mode", "unknown mode %q (want disabled or circuit_breaker)", ep.Mode)
		}
	}
}

func checkLimits(ps *problems, path string, limits []Limit) {
	for i, l := range limits {
		p := path + "[" + strconv.Itoa(i) + "]"
		want, ok := kindParams[l.Kind]
		if !ok {
			if l.Kind == "" {
				ps.add(p+".kind", "required (concurrency, token_bucket, fixed_window or sliding_window)")
			} else {
				ps.add(p+".kind", "unknown limit kind %q (want concurrency, token_bucket, fixed_window or sliding_window)", l.Kind)
			}
			continue
		}
		for _, key := range l.present() {
			if !slices.Contains(want, key) {
				ps.add(p+"."+key, "not a parameter of kind %s (it takes %s)", l.Kind, strings.Join(want, ", "))
			}
		}
	}
}
