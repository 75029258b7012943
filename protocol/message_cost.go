package protocol

// MinMessageCost is the least a stream message costs against the flow
// control windows (docs/streaming.md): about what a receiver holds for
// one queued message besides its bytes, so that a window bounds the
// receiver's memory in bytes for empty and tiny messages too (a 1 MiB
// connection window holds at most 16,384 of them).
const MinMessageCost = 64

// MaxMessageCharge is the largest flow-control charge a stream message may
// have: [MaxWindow], the most one WindowUpdate can return. A receiver
// treats a message charged more (a compressed message declaring an
// original length above it, or a frame that long) as a protocol
// violation, before it queues or drops anything; a sender refuses to send
// one (package flow's ErrTooLarge). So every charge can be given back, and
// a window's outstanding bytes stay below 2·MaxWindow.
const MaxMessageCharge = MaxWindow

// MessageCost is the flow-control charge of one stream message, the same
// for sender and receiver (docs/streaming.md): the largest of
// MinMessageCost, its uncompressed length (what the receiver's consumer
// gets) and its length on the wire (what the receiver holds until the
// consumer takes it; for an uncompressed message the two are equal). A
// sender reserves it before sending; a receiver charges it as the message
// arrives and returns it when the consumer takes the message. A cost above
// [MaxMessageCharge] cannot be charged (see there).
func MessageCost(wire int, uncompressed uint64) uint64 {
	return max(MinMessageCost, uint64(wire), uncompressed)
}
