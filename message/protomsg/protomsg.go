// Package protomsg is the protobuf message codec (google.golang.org/protobuf)
// for the typed handlers of package server and the typed calls of package
// client.
package protomsg

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/sluicerpc/sluice/message"
)

// Message is the constraint of Codec's type parameters: P is *T and a
// generated protobuf message.
type Message[T any] interface {
	*T
	proto.Message
}

// Codec returns the protobuf codec for the generated message type T, e.g.
// protomsg.Codec[pb.EchoRequest](). Unmarshal merges nothing: it expects a
// zero or reset message and discards unknown fields only as protobuf does
// (they are kept as unknown fields).
func Codec[T any, P Message[T]]() message.Codec[T] { return codec[T, P]{} }

type codec[T any, P Message[T]] struct{}

var marshalOptions = proto.MarshalOptions{}

func (codec[T, P]) Name() string { return "proto" }

func (codec[T, P]) AppendMarshal(dst []byte, m *T) ([]byte, error) {
	if m == nil {
		return nil, fmt.Errorf("message/proto: marshal of a nil %T", m)
	}
	b, err := marshalOptions.MarshalAppend(dst, P(m))
	if err != nil {
		return nil, fmt.Errorf("message/proto: %w", err)
	}
	return b, nil
}

func (codec[T, P]) Unmarshal(data []byte, m *T) error {
	if err := proto.Unmarshal(data, P(m)); err != nil {
		return fmt.Errorf("message/proto: %w", err)
	}
	return nil
}
