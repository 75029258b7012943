package etcdsource

import (
	"fmt"
	"time"

	"github.com/sluicerpc/sluice/control"
)

// EventKind says what an Event reports.
type EventKind int

const (
	// EventApplied: the revision's document was given to the Controller
	// and is in force (Applied; Applied.Unchanged when it equals the
	// configuration already in force).
	EventApplied EventKind = iota + 1
	// EventRejected: the revision's document was not applied (Err: the
	// Controller's error, or a *ValueTooLargeError); the configuration
	// in force is kept.
	EventRejected
	// EventSkipped: a read found a revision not newer than the last one
	// handled (after a reconnect, or an etcd restored from an older
	// backup); nothing was applied.
	EventSkipped
	// EventDeleted: the key was deleted at Revision; the configuration
	// in force is kept.
	EventDeleted
	// EventMissing: a read at etcd's Revision found no key; the
	// configuration in force is kept.
	EventMissing
	// EventWatching: etcd created the watch of the key from Revision.
	EventWatching
	// EventFailed: a read or the watch failed (Err), or the watch asked
	// for a compacted revision; the source reads the key again after
	// Wait.
	EventFailed
)

func (k EventKind) String() string {
	switch k {
	case EventApplied:
		return "applied"
	case EventRejected:
		return "rejected"
	case EventSkipped:
		return "skipped"
	case EventDeleted:
		return "deleted"
	case EventMissing:
		return "missing"
	case EventWatching:
		return "watching"
	case EventFailed:
		return "failed"
	}
	return fmt.Sprintf("EventKind(%d)", int(k))
}

// Event is one thing the source did or saw.
type Event struct {
	Kind EventKind
	// Revision is the key's revision (applied, rejected, skipped,
	// deleted), etcd's revision of a read that found no key, or the
	// revision a watch starts from.
	Revision int64
	// Applied is the configuration in force after EventApplied.
	Applied control.Applied
	// Err is why a revision was rejected or an attempt failed.
	Err error
	// Wait is the backoff before the next attempt after EventFailed.
	Wait time.Duration
}

// ValueTooLargeError is a value over Options.MaxValueBytes.
type ValueTooLargeError struct {
	Key      string
	Revision int64
	Size     int
	Max      int
}

func (e *ValueTooLargeError) Error() string {
	return fmt.Sprintf("etcdsource: %s@%d: the value has %d bytes, more than the %d a configuration document may have; the configuration in force is kept",
		e.Key, e.Revision, e.Size, e.Max)
}
