package decodemodel

import "fmt"

// Model is where a server decodes an admitted compressed request body.
type Model int

const (
	// ModelCall (a) decodes in the call goroutine the reader starts for
	// every admitted call anyway, before the handler runs. The reader
	// never waits for a decode.
	ModelCall Model = iota
	// ModelInline (b) decodes on the reader, then starts the call
	// goroutine with the decoded body. The reader reads no frame
	// (Cancel included) until the decode ends.
	ModelInline
	// ModelQuanta (c) decodes on the reader like ModelInline, with a
	// context whose every check (at least one per spi.DecodeQuantum of
	// output) first reads, without blocking, the frames the socket holds
	// and applies the Cancels among them. The reader still parses nothing
	// else between quanta.
	ModelQuanta
	// ModelWorkers (d) queues the call on its connection's bounded queue;
	// GOMAXPROCS persistent workers take one call at a time from the
	// connections with work, round robin, decode it, and start its call
	// goroutine. The reader blocks only when its queue is full.
	ModelWorkers
	// ModelNone is a reference, not a candidate: decode and handler both
	// run on the reader, no goroutine per call.
	ModelNone
)

// Models lists the candidates and the reference, in table order.
var Models = []Model{ModelCall, ModelInline, ModelQuanta, ModelWorkers, ModelNone}

func (m Model) String() string {
	switch m {
	case ModelCall:
		return "a-call"
	case ModelInline:
		return "b-inline"
	case ModelQuanta:
		return "c-quanta"
	case ModelWorkers:
		return "d-workers"
	case ModelNone:
		return "none"
	}
	return fmt.Sprintf("Model(%d)", int(m))
}
