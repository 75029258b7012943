package protocol

// ReaderBufferCap is the capacity of r's payload buffer: what the reader
// holds for payloads.
func ReaderBufferCap(r *Reader) int { return cap(r.buf) }
