package decodemodel_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"

	"github.com/sluicerpc/sluice/bench/decodemodel"
)

// The experiment's inputs: deterministic payloads of a given
// compressibility, and request bodies that carry the codec's index, the
// original length and the compressed bytes, which the harness's server
// decodes with Codecs()[index]. RunCell, RunProbe and RunStop take such a
// body (go test -run TestPhase0 -v prints the table).
func ExampleBody() {
	fmt.Println(decodemodel.Models)
	payload := decodemodel.Payload(decodemodel.High, 64<<10)
	fmt.Println(bytes.Equal(payload, decodemodel.Payload(decodemodel.High, 64<<10)))

	body := decodemodel.Body("zstd", payload)
	codec := decodemodel.Codecs()[body[0]]
	n, k := binary.Uvarint(body[1:])
	decoded, err := codec.Decompress(context.Background(), nil, body[1+k:], int(n))
	fmt.Println(codec.Name(), n, len(body) < len(payload)/2, bytes.Equal(decoded, payload), err)
	// Output:
	// [a-call b-inline c-quanta d-workers none]
	// true
	// zstd 65536 true true <nil>
}
