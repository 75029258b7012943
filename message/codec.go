package message

// Codec marshals and unmarshals messages of type T. Implementations must be
// safe for concurrent use by many calls.
type Codec[T any] interface {
	// Name identifies the codec in errors and logs ("json", "proto").
	Name() string
	// AppendMarshal appends the encoding of m to dst and returns the
	// extended slice; dst may be reused by the caller afterwards, so the
	// codec keeps no reference to it.
	AppendMarshal(dst []byte, m *T) ([]byte, error)
	// Unmarshal decodes data into m, which the caller owns (a zero or
	// reset value). The codec keeps no reference to data: the caller may
	// reuse its buffer once Unmarshal returns. An error means the bytes
	// are not a valid message: a server answers InvalidArgument.
	Unmarshal(data []byte, m *T) error
}
