package admin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"go.yaml.in/yaml/v3"
)

// withoutAdmission returns doc with server.admission removed and
// everything else kept: a JSON document stays JSON (keys sorted, numbers
// as written), a YAML one stays YAML with its comments (re-indented by
// two spaces). doc is a document that parsed (the one in force).
func withoutAdmission(doc []byte) ([]byte, error) {
	if contentType(doc) == "application/json" {
		return jsonWithoutAdmission(doc)
	}
	var root yaml.Node
	if err := yaml.Unmarshal(doc, &root); err != nil {
		return nil, err
	}
	if root.Kind != yaml.DocumentNode || len(root.Content) != 1 || root.Content[0].Kind != yaml.MappingNode {
		return nil, errors.New("the document is not a mapping")
	}
	if srv := mappingValue(root.Content[0], "server"); srv != nil && srv.Kind == yaml.MappingNode {
		removeKey(srv, "admission")
	}
	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(&root); err != nil {
		return nil, err
	}
	if err := enc.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func mappingValue(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

func removeKey(m *yaml.Node, key string) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			m.Content = append(m.Content[:i], m.Content[i+2:]...)
			return
		}
	}
}

func jsonWithoutAdmission(doc []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	if srv, ok := m["server"].(map[string]any); ok {
		delete(srv, "admission")
	} else if m["server"] != nil {
		return nil, fmt.Errorf("server is a %T, not an object", m["server"])
	}
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}
