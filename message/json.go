package message

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// JSON returns the encoding/json codec for messages of type T. Unmarshal
// rejects unknown fields and trailing data, so a client built against
// another version of a message fails loudly rather than silently dropping
// fields.
func JSON[T any]() Codec[T] { return jsonCodec[T]{} }

type jsonCodec[T any] struct{}

func (jsonCodec[T]) Name() string { return "json" }

func (jsonCodec[T]) AppendMarshal(dst []byte, m *T) ([]byte, error) {
	if m == nil {
		return nil, fmt.Errorf("message/json: marshal of a nil %T", m)
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("message/json: %w", err)
	}
	return append(dst, b...), nil
}

func (jsonCodec[T]) Unmarshal(data []byte, m *T) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(m); err != nil {
		return fmt.Errorf("message/json: %w", err)
	}
	if dec.More() {
		return fmt.Errorf("message/json: trailing data after the message")
	}
	return nil
}
