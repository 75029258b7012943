package codecs

import (
	"fmt"

	"github.com/sluicerpc/sluice/spi"
)

// Policy decides which bodies are worth compressing: at least MinSize
// bytes, and only when compression saves at least MinSaving bytes and
// MinSavingPercent percent of the body. The zero value of a field selects
// its default (DefaultPolicy); a negative MinSize disables compression.
//
// A server and a client each hold one; per method and per call overrides
// are Policies too.
type Policy struct {
	MinSize          int
	MinSaving        int
	MinSavingPercent int
}

// The defaults: 1024 bytes, saving at least 64 bytes and 5%.
const (
	DefaultMinSize          = 1024
	DefaultMinSaving        = 64
	DefaultMinSavingPercent = 5
)

// DefaultPolicy is the policy with every default.
func DefaultPolicy() Policy {
	return Policy{MinSize: DefaultMinSize, MinSaving: DefaultMinSaving, MinSavingPercent: DefaultMinSavingPercent}
}

// resolved fills zero fields with the defaults.
func (p Policy) resolved() Policy {
	if p.MinSize == 0 {
		p.MinSize = DefaultMinSize
	}
	if p.MinSaving == 0 {
		p.MinSaving = DefaultMinSaving
	}
	if p.MinSavingPercent == 0 {
		p.MinSavingPercent = DefaultMinSavingPercent
	}
	return p
}

// Validate reports a field out of range, naming it.
func (p Policy) Validate() error {
	switch {
	case p.MinSaving < 0:
		return fmt.Errorf("codecs: Policy.MinSaving must not be negative, got %d", p.MinSaving)
	case p.MinSavingPercent < 0 || p.MinSavingPercent > 99:
		return fmt.Errorf("codecs: Policy.MinSavingPercent must be in [0, 99], got %d", p.MinSavingPercent)
	}
	return nil
}

// Budget is the largest compressed size worth sending for a body of n
// bytes, or -1 when a body of n bytes is not to be compressed at all.
func (p Policy) Budget(n int) int {
	p = p.resolved()
	if p.MinSize < 0 || n < p.MinSize {
		return -1
	}
	saving := max(p.MinSaving, (n*p.MinSavingPercent+99)/100)
	if saving >= n {
		return -1
	}
	return n - saving
}

// Compress compresses src with c into dst's spare capacity when the
// policy finds it worth it: dst must have room for at least Budget(len(src))
// bytes beyond len(dst); the codec is given exactly that room, so a result
// that would not save enough does not fit and is not used. It returns dst
// extended by the compressed body and true, or dst unchanged and false (send
// src as it is).
func (p Policy) Compress(c spi.Codec, dst, src []byte) ([]byte, bool) {
	budget := p.Budget(len(src))
	if budget <= 0 || cap(dst)-len(dst) < budget {
		return dst, false
	}
	out, fits, err := Compress(c, dst[:len(dst):len(dst)+budget], src)
	if err != nil || !fits {
		return dst, false
	}
	return dst[:len(out)], true
}
