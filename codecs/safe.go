package codecs

import (
	"context"
	"fmt"

	"github.com/sluicerpc/sluice/spi"
)

// PanicError is the error of a codec that panicked: a bug in it, or in a
// library it wraps, met with hostile input. The server and the client call
// every codec through Decompress and Compress, so that a codec's panic
// fails one call instead of the process.
type PanicError struct {
	Codec string // the codec's profile name
	Op    string // "Compress" or "Decompress"
	Value any    // what it panicked with
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("codecs: %s.%s panicked: %v", e.Codec, e.Op, e.Value)
}

// Decompress is c.Decompress, with a panic turned into a *PanicError
// (and dst returned as it was given).
func Decompress(ctx context.Context, c spi.Codec, dst, src []byte, limit int) (out []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = dst, &PanicError{Codec: c.Name(), Op: "Decompress", Value: r}
		}
	}()
	return c.Decompress(ctx, dst, src, limit)
}

// Compress is c.Compress, with a panic turned into a *PanicError (and
// dst returned as it was given, not fitting).
func Compress(c spi.Codec, dst, src []byte) (out []byte, fits bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, fits, err = dst, false, &PanicError{Codec: c.Name(), Op: "Compress", Value: r}
		}
	}()
	return c.Compress(dst, src)
}
