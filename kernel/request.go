package kernel

// Request is what admission needs to know about one request. It is passed
// by value and never retained after Admit returns.
type Request struct {
	// Method is the catalog id of the called method.
	Method MethodID
	// OneWay marks a request that has no response: it waits in the queue
	// only if its program's QueuePolicy.QueueOneWayCalls is set.
	OneWay bool
	// Bytes is the payload size a waiting request retains, charged to
	// MaxQueuedBytes while it waits.
	Bytes int64
	// Conn, Identity and Metadata are facts for the partition selector:
	// the connection the request arrived on, its authenticated identity,
	// and its metadata (nil when none).
	Conn     uint64
	Identity string
	Metadata Metadata
}
