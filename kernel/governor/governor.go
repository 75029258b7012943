package governor

import (
	"errors"
	"fmt"
	"runtime"
	"sync/atomic"
)

// Limits are the governor's server-wide bounds beyond call capacity. Each
// is at least 1; zero fields of a Limits given to New or SetLimits select
// the defaults (DefaultLimits).
type Limits struct {
	// Decodes bounds the decompressions running at once.
	Decodes int64
	// RetainedBytes bounds the compressed request bytes held by calls
	// waiting to be decoded (queued or reserved).
	RetainedBytes int64
	// DecodedBytes bounds the decoded bytes in flight: the output of
	// running decodes and the decoded bodies of calls not yet finished.
	DecodedBytes int64
	// StreamBytes bounds the bytes of streams received before their call
	// was admitted (by their length on the wire; over it the server
	// refuses the stream with reason "stream_bytes").
	StreamBytes int64
}

// DefaultLimits are the defaults: GOMAXPROCS decodes at once (decodes are
// CPU work: more at once than there are Ps only adds latency and starves
// the connections' readers; docs/governor.md has the measurements), 64 MiB
// retained, 256 MiB decoded, 64 MiB of pre-admission stream bytes.
// docs/governor.md states the arithmetic.
func DefaultLimits() Limits {
	return Limits{Decodes: int64(max(1, runtime.GOMAXPROCS(0))), RetainedBytes: 64 << 20, DecodedBytes: 256 << 20, StreamBytes: 64 << 20}
}

// WithDefaults fills l's zero fields with DefaultLimits', as New and
// SetLimits do.
func (l Limits) WithDefaults() Limits {
	d := DefaultLimits()
	if l.Decodes == 0 {
		l.Decodes = d.Decodes
	}
	if l.RetainedBytes == 0 {
		l.RetainedBytes = d.RetainedBytes
	}
	if l.DecodedBytes == 0 {
		l.DecodedBytes = d.DecodedBytes
	}
	if l.StreamBytes == 0 {
		l.StreamBytes = d.StreamBytes
	}
	return l
}

// Validate reports every negative field, by name.
func (l Limits) Validate() error {
	var errs []error
	for _, f := range []struct {
		name string
		v    int64
	}{{"Decodes", l.Decodes}, {"RetainedBytes", l.RetainedBytes}, {"DecodedBytes", l.DecodedBytes}, {"StreamBytes", l.StreamBytes}} {
		if f.v < 0 {
			errs = append(errs, fmt.Errorf("governor: Limits.%s must not be negative, got %d", f.name, f.v))
		}
	}
	return errors.Join(errs...)
}

// Governor holds the server-wide budgets a request's decode pays for. It
// is stable server state: an admission update never touches it. Its
// limits change live with SetLimits, which revokes nothing.
type Governor struct {
	Decodes, Retained, Decoded, Stream *Budget

	// Large bounds the decodes of more than LargeDecode declared bytes to
	// Decodes-1 (at least 1): with two credits or more, one is always left
	// for small decodes, which therefore never wait behind a large one
	// (a bomb's decode of 64 MiB takes about 100 ms of CPU; an honest 16
	// KiB body, microseconds). A large decode takes its place here before
	// its credit (PartLargeDecode, then PartDecode). It follows Decodes.
	Large *Budget

	shares atomic.Int64 // Shares open (share.go)
}

// New returns a Governor with limits l (defaults for zero fields).
func New(l Limits) (*Governor, error) {
	if err := l.Validate(); err != nil {
		return nil, err
	}
	l = l.WithDefaults()
	return &Governor{
		Decodes:  NewBudget("decodes", l.Decodes),
		Retained: NewBudget("retained compressed bytes", l.RetainedBytes),
		Decoded:  NewBudget("decoded bytes", l.DecodedBytes),
		Stream:   NewBudget("pre-admission stream bytes", l.StreamBytes),
		Large:    NewBudget("large decodes", largeDecodes(l.Decodes)),
	}, nil
}

// SetLimits changes every limit (defaults for zero fields), or none when l
// is invalid.
func (g *Governor) SetLimits(l Limits) error {
	if err := l.Validate(); err != nil {
		return err
	}
	l = l.WithDefaults()
	g.Decodes.SetLimit(l.Decodes)
	g.Large.SetLimit(largeDecodes(l.Decodes))
	g.Retained.SetLimit(l.RetainedBytes)
	g.Decoded.SetLimit(l.DecodedBytes)
	g.Stream.SetLimit(l.StreamBytes)
	return nil
}

// Limits returns the limits in force.
func (g *Governor) Limits() Limits {
	return Limits{
		Decodes:       g.Decodes.Snapshot().Limit,
		RetainedBytes: g.Retained.Snapshot().Limit,
		DecodedBytes:  g.Decoded.Snapshot().Limit,
		StreamBytes:   g.Stream.Snapshot().Limit,
	}
}

// Snapshot is a reading of every budget.
type Snapshot struct {
	Decodes, Retained, Decoded, Stream BudgetSnapshot
}

// Snapshot reads every budget.
func (g *Governor) Snapshot() Snapshot {
	return Snapshot{Decodes: g.Decodes.Snapshot(), Retained: g.Retained.Snapshot(), Decoded: g.Decoded.Snapshot(), Stream: g.Stream.Snapshot()}
}

// LargeDecode is the declared length above which a decode is large: it
// takes a place among Governor.Large before its decode credit.
const LargeDecode = 1 << 20

// largeDecodes is Large's limit for a Decodes limit.
func largeDecodes(decodes int64) int64 { return max(1, decodes-1) }
