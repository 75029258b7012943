package protocol

// MinMessageCost is the least a stream message costs against the flow
// control windows (docs/streaming.md): about what a receiver holds for
// one queued message besides its bytes, so that a window bounds the
// receiver's memory in bytes for empty and tiny messages too (a 1 MiB
// connection window holds at most 16,384 of them).
const MinMessageCost = 64

// MessageCost is the flow-control charge of one stream message, the same
// for sender and receiver (docs/streaming.md): the largest of
// MinMessageCost, its uncompressed length (what the receiver's consumer
// gets) and its length on the wire (what the receiver holds until the
// consumer takes it; for an uncompressed message the two are equal). A
// sender reserves it before sending; a receiver charges it as the message
// arrives and returns it when the consumer takes the message.
func MessageCost(wire int, uncompressed uint64) uint64 {
	return max(MinMessageCost, uint64(wire), uncompressed)
}
