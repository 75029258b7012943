package decodemodel

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/sluicerpc/sluice/codecs"
	"github.com/sluicerpc/sluice/spi"
)

// Codecs are the codecs the harness serves, in the order of their index
// on the wire: the built-ins plus s2.
func Codecs() []spi.Codec {
	return []spi.Codec{codecs.Zstd(), codecs.Gzip(), codecs.S2(), codecs.Brotli()}
}

func codecIndex(name string) int {
	for i, c := range Codecs() {
		if c.Name() == name {
			return i
		}
	}
	panic("decodemodel: no codec " + name)
}

// Ratio is how compressible a payload is.
type Ratio string

const (
	High Ratio = "high" // words from a small vocabulary: zstd about 4x
	Low  Ratio = "low"  // mostly random bytes: about 1.1x
)

// Payload returns size deterministic bytes of the given compressibility;
// the same arguments always give the same bytes.
func Payload(r Ratio, size int) []byte {
	rng := rand.New(rand.NewPCG(uint64(size), 12))
	out := make([]byte, 0, size+16)
	switch r {
	case High:
		words := strings.Fields("the server decodes a compressed request body after admission and the reader " +
			"keeps reading cancel frames while a worker or the call goroutine runs the codec on bytes " +
			"that came from the network so memory follows bytes received never bytes declared quota " +
			"limit reservation permit budget stream flow control window frame header metadata route")
		for len(out) < size {
			out = append(out, words[rng.IntN(len(words))]...)
			out = append(out, ' ')
			if rng.IntN(16) == 0 {
				out = fmt.Appendf(out, "%d\n", rng.IntN(100000))
			}
		}
	case Low:
		prev := byte(0)
		for len(out) < size {
			if rng.IntN(8) != 0 {
				prev = byte(rng.Uint32())
			}
			out = append(out, prev)
		}
	default:
		panic("decodemodel: no ratio " + string(r))
	}
	return out[:size]
}

// Body returns the request body for payload compressed with the named
// codec: codec index, uvarint original length, compressed bytes.
func Body(codec string, payload []byte) []byte {
	i := codecIndex(codec)
	c := Codecs()[i]
	out := make([]byte, 0, 1+binary.MaxVarintLen64+2*len(payload)+1024)
	out = append(out, byte(i))
	out = binary.AppendUvarint(out, uint64(len(payload)))
	out, fits, err := c.Compress(out, payload)
	if !fits || err != nil {
		panic(fmt.Sprintf("decodemodel: %s does not compress %d bytes: %v %v", codec, len(payload), fits, err))
	}
	return out
}
