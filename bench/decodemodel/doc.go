// Package decodemodel is the Phase 0 experiment of issue 12: where should a
// server decode a compressed request body? It runs the four candidate
// execution models of docs/governor.md over real TCP loopback connections
// with the real codecs of the codecs module, and measures throughput, CPU,
// latency, allocation, how long a Cancel frame that arrives during a decode
// waits before the decode stops, and how long a Stop takes to end every
// decode.
//
// The server here is not sluice's: it is the smallest shape that has what
// the decision depends on. Each connection has one reader goroutine that
// parses length-prefixed frames (Request, Cancel), refuses a request when
// the call capacity is full (before any decode, in every model), copies an
// admitted request's body, and hands it to the model. Every admitted call
// runs its handler on a goroutine of its own, as sluice's `go cl.run()`
// does; the models differ only in where the decode runs:
//
//	ModelCall    (a) in the call goroutine, before the handler
//	ModelInline  (b) on the reader, before the call goroutine starts
//	ModelQuanta  (c) on the reader, polling the socket for Cancel frames
//	             at every context check (at least one per spi.DecodeQuantum)
//	ModelWorkers (d) on one of GOMAXPROCS persistent workers fed by bounded
//	             per-connection queues served round robin
//
// and ModelNone, a reference only: decode and handler both on the reader,
// no goroutine at all (what the goroutine start costs).
//
// TestPhase0 prints the table (go test ./bench/decodemodel -run TestPhase0
// -v; DECODEMODEL_LONG=1 for the long run), BenchmarkDecodeModel compares
// throughput under go test -bench.
package decodemodel
