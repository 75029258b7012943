package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Duration is a non-negative time.Duration, written in a document as a Go
// duration string ("250ms", "1m30s"). A bare number is an error: the unit
// is never implied.
type Duration time.Duration

// Std returns d as a time.Duration.
func (d Duration) Std() time.Duration { return time.Duration(d) }

func (d Duration) String() string { return time.Duration(d).String() }

// parseDuration parses s as a non-negative Go duration.
func parseDuration(s string) (Duration, error) {
	v, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("invalid duration %q (want a Go duration such as \"250ms\" or \"1m30s\")", s)
	}
	if v < 0 {
		return 0, fmt.Errorf("must not be negative, got %q", s)
	}
	return Duration(v), nil
}

// Size is a non-negative number of bytes, written in a document as an
// integer or as a string of a decimal integer and a binary unit: B, KiB,
// MiB, GiB or TiB, optionally after one space ("64KiB", "1 MiB").
// Decimal units (KB, MB) are rejected as ambiguous, and so are fractions
// and signs.
type Size int64

var sizeUnits = []struct {
	suffix string
	shift  uint
}{{"TiB", 40}, {"GiB", 30}, {"MiB", 20}, {"KiB", 10}, {"B", 0}}

// parseSize parses the string form of a Size.
func parseSize(s string) (Size, error) {
	bad := func() (Size, error) {
		return 0, fmt.Errorf("invalid size %q (want bytes as an integer, or an integer with B, KiB, MiB, GiB or TiB, such as \"64KiB\")", s)
	}
	for _, u := range sizeUnits {
		num, ok := strings.CutSuffix(s, u.suffix)
		if !ok {
			continue
		}
		num = strings.TrimSuffix(num, " ")
		if neg, ok := strings.CutPrefix(num, "-"); ok && digits(neg) {
			return 0, fmt.Errorf("must not be negative, got %q", s)
		}
		if !digits(num) {
			return bad()
		}
		n, err := strconv.ParseInt(num, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("size %q overflows 64 bits", s)
		}
		if n > math.MaxInt64>>u.shift {
			return 0, fmt.Errorf("size %q overflows 64 bits", s)
		}
		return Size(n << u.shift), nil
	}
	return bad()
}

func (s Size) String() string {
	for _, u := range sizeUnits {
		if u.shift > 0 && s != 0 && s%(1<<u.shift) == 0 {
			return strconv.FormatInt(int64(s)>>u.shift, 10) + u.suffix
		}
	}
	return strconv.FormatInt(int64(s), 10)
}

// digits reports whether s is a non-empty run of ASCII digits.
func digits(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
