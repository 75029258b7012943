package kernel

import "time"

// PartitionPolicy is the one partition layer: a selector maps each request
// to a key, and each key gets its own limits (Rule), in a namespace of at
// most MaxPartitions keys whose idle entries are reclaimed.
type PartitionPolicy struct {
	// Selector chooses the partition of a request. Its identity (Name and
	// Version) names the namespace: a candidate with the same identity
	// keeps the live namespace and its entries; a new identity starts a
	// new, empty namespace, while requests of older programs finish in
	// the old one.
	Selector Selector
	// MaxPartitions is a live target for the number of keys (the default
	// partition is not counted), from 1 to MaxPartitionsLimit. Raising it admits exactly the new room;
	// lowering it evicts nobody: new keys are refused with
	// partition_capacity until idle reclaim brings the count under it.
	MaxPartitions int
	// IdleTimeout is how long an entry stays after its last admission
	// once it has no active request (an entry with an active request is
	// never reclaimed). A change applies to every entry's existing
	// last-use time.
	IdleTimeout time.Duration
	// Rule are the limits of each partition: at most one concurrency and
	// one rate limit, at least one of them.
	Rule Rule
}

// MaxPartitionsLimit is the largest PartitionPolicy.MaxPartitions: about
// a million keys, each of which costs about 0.5 KB while it lives. A
// namespace at this size holds about 500 MB; a configuration that asked
// for 2^62 let one connection create keys without any bound but memory.
const MaxPartitionsLimit = 1 << 20

// Selector maps a request to its partition key. Go funcs are not
// comparable, so the selector's identity is explicit: change Name or bump
// Version whenever Key's meaning changes. Two selectors with the same Name
// and Version must compute the same keys.
type Selector struct {
	Name    string
	Version uint64
	// Key returns the request's partition key, or ok == false for the
	// default partition. The default partition is a key of its own: it
	// never aliases a business key, not even "". Key runs on the request
	// path: it must be fast, must not block, and should not allocate
	// (return a string the request already has, such as a metadata
	// value).
	Key func(f Facts) (key string, ok bool)
}

// Facts are what a selector can see of a request.
type Facts struct {
	Service  string // service name
	Method   string // "service/method"
	MethodID MethodID
	OneWay   bool
	// Conn identifies the connection the request arrived on.
	Conn uint64
	// Identity is the authenticated identity of the connection, if any.
	Identity string
	// Metadata are the request's metadata; nil when it has none.
	Metadata Metadata
}

// Metadata gives read access to request metadata.
type Metadata interface {
	Get(key string) (value string, ok bool)
}
