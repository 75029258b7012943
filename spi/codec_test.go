package spi_test

import (
	"errors"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sluicerpc/sluice/spi"
)

func TestDecodeLimit(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		most, floor, ratio, compressed, want int
	}{
		{64 * mib, 4 * mib, 100, 1 << 10, 4 * mib},       // a tiny frame: the floor
		{64 * mib, 4 * mib, 100, 100 << 10, 10000 << 10}, // compressed x ratio
		{64 * mib, 4 * mib, 100, 10 * mib, 64 * mib},     // capped by most
		{64 * mib, 4 * mib, 0, 1, 64 * mib},              // guard off
		{64 * mib, 4 * mib, 100, 0, 4 * mib},             // empty input
		{64 * mib, 4 * mib, 100, math.MaxInt / 2, 64 * mib},
		{2 * mib, 4 * mib, 100, 1, 2 * mib}, // floor above most: most
	} {
		assert.Equal(t, tc.want, spi.DecodeLimit(tc.most, tc.floor, tc.ratio, tc.compressed), "%+v", tc)
	}
}

func TestValidCodecName(t *testing.T) {
	for _, ok := range []string{"gzip", "zstd", "s2", "br", "identity", "x-my.codec_2"} {
		assert.True(t, spi.ValidCodecName(ok), ok)
	}
	for _, bad := range []string{"", "GZIP", "a b", "é", string(make([]byte, 65))} {
		assert.False(t, spi.ValidCodecName(bad), "%q", bad)
	}
}

func TestCodecErrors(t *testing.T) {
	cause := errors.New("unexpected EOF")
	err := spi.CorruptError("gzip", "truncated input", cause)
	assert.ErrorIs(t, err, spi.ErrCorrupt)
	assert.ErrorIs(t, err, cause)
	assert.Equal(t, "gzip: truncated input: spi: corrupt compressed body (unexpected EOF)", err.Error())
	assert.ErrorIs(t, spi.TooLargeError("zstd", 10), spi.ErrDecodedTooLarge)
	assert.Equal(t, "zstd: more than 10 decoded bytes: spi: decoded body exceeds its limit", spi.TooLargeError("zstd", 10).Error())
}
