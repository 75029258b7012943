// Package rawcodec is a grpc-go codec that passes *[]byte through
// untouched: grpc-go without protobuf, the fastest grpc-go can be, for
// comparisons against sluice's raw handlers.
package rawcodec

import (
	"fmt"

	"google.golang.org/grpc/encoding"
)

// Codec marshals a *[]byte as its bytes and unmarshals into a *[]byte (a
// copy: grpc-go reuses its buffers).
type Codec struct{}

// Name is "raw".
func (Codec) Name() string { return "raw" }

// Marshal returns *v.
func (Codec) Marshal(v any) ([]byte, error) {
	b, ok := v.(*[]byte)
	if !ok {
		return nil, fmt.Errorf("raw codec: marshal of %T", v)
	}
	return *b, nil
}

// Unmarshal copies data into *v.
func (Codec) Unmarshal(data []byte, v any) error {
	b, ok := v.(*[]byte)
	if !ok {
		return fmt.Errorf("raw codec: unmarshal into %T", v)
	}
	*b = append((*b)[:0], data...)
	return nil
}

var _ encoding.Codec = Codec{}
