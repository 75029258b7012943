package kernel

import "errors"

// Reason says why admission refused a request.
type Reason uint8

const (
	ReasonNone Reason = iota
	// ReasonConcurrency: a concurrency limit was reached and the request
	// could not wait.
	ReasonConcurrency
	// ReasonRate: a rate limit was reached and the request could not
	// wait.
	ReasonRate
	// ReasonQueueFull: waiting would exceed MaxQueuedCalls or
	// MaxQueuedBytes of the request's program.
	ReasonQueueFull
	// ReasonQueueTimeout: the request waited its MaxQueueDelay.
	ReasonQueueTimeout
	// ReasonUnavailable: admission is sealed (the server is stopping).
	ReasonUnavailable
	// ReasonPartitionCapacity: the request's partition key is new and the
	// namespace holds MaxPartitions keys that are all active or not yet
	// idle.
	ReasonPartitionCapacity
	reasonCount
)

var reasonNames = [...]string{"none", "concurrency", "rate", "queue_full", "queue_timeout", "unavailable", "partition_capacity"}

// String returns the reason's wire name, for example "queue_full".
func (r Reason) String() string {
	if r < reasonCount {
		return reasonNames[r]
	}
	return "reason(?)"
}

// ErrRejected matches every admission refusal (errors.Is).
var ErrRejected = errors.New("kernel: admission rejected")

// ErrUnavailable matches refusals because admission is sealed.
var ErrUnavailable = errors.New("kernel: admission unavailable")

// RejectedError is an admission refusal. The kernel returns preallocated
// values, so a refusal allocates nothing; details that vary per request (the
// scope, a retry time) are on the Permit.
type RejectedError struct {
	Reason Reason
}

func (e *RejectedError) Error() string { return "kernel: admission rejected: " + e.Reason.String() }

// Is matches ErrRejected, and ErrUnavailable for ReasonUnavailable.
func (e *RejectedError) Is(target error) bool {
	return target == ErrRejected || (target == ErrUnavailable && e.Reason == ReasonUnavailable)
}

var rejections = func() (r [reasonCount]RejectedError) {
	for i := range r {
		r[i].Reason = Reason(i)
	}
	return
}()

func (r Reason) err() error { return &rejections[r] }

// ReasonOf returns the reason of an admission refusal.
func ReasonOf(err error) (Reason, bool) {
	var re *RejectedError
	if errors.As(err, &re) {
		return re.Reason, true
	}
	return ReasonNone, false
}
