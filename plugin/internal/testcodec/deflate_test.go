package testcodec_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/sluicerpc/sluice/plugin/internal/testcodec"
	"github.com/sluicerpc/sluice/spi"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func compress(t *testing.T, src []byte) []byte {
	t.Helper()
	out, fits, err := testcodec.Deflate().Compress(make([]byte, 0, len(src)+64), src)
	require.NoError(t, err)
	require.True(t, fits)
	return out
}

func TestDeflateRoundTrip(t *testing.T) {
	c := testcodec.Deflate()
	for _, n := range []int{0, 1, 1000, spi.DecodeQuantum + 17, 3 * spi.DecodeQuantum} {
		src := bytes.Repeat([]byte("sluice "), n/7+1)[:n]
		body := compress(t, src)
		got, err := c.Decompress(context.Background(), []byte("x"), body, n)
		require.NoError(t, err, "size %d", n)
		assert.Equal(t, append([]byte("x"), src...), got, "size %d", n)
	}
}

func TestDeflateCompressNeverGrows(t *testing.T) {
	dst := make([]byte, 2, 10)
	out, fits, err := testcodec.Deflate().Compress(dst, bytes.Repeat([]byte{1, 2, 3, 4, 5, 6, 7}, 1000))
	require.NoError(t, err)
	assert.False(t, fits)
	assert.Equal(t, dst, out)
}

func TestDeflateRefusals(t *testing.T) {
	c := testcodec.Deflate()
	body := compress(t, make([]byte, 10000))
	dst := []byte("keep")

	got, err := c.Decompress(context.Background(), dst, body, 9999)
	assert.ErrorIs(t, err, spi.ErrDecodedTooLarge)
	assert.Equal(t, dst, got)

	_, err = c.Decompress(context.Background(), nil, body[:len(body)-1], 10000)
	assert.ErrorIs(t, err, spi.ErrCorrupt, "truncated")
	_, err = c.Decompress(context.Background(), nil, append(body[:len(body):len(body)], 0), 10000)
	assert.ErrorIs(t, err, spi.ErrCorrupt, "trailing")
	_, err = c.Decompress(context.Background(), nil, []byte{0xff, 0xff, 0xff}, 10000)
	assert.ErrorIs(t, err, spi.ErrCorrupt, "corrupt")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = c.Decompress(ctx, nil, body, 10000)
	assert.ErrorIs(t, err, context.Canceled)
}

func TestDeflateBomb(t *testing.T) {
	const decoded = 8 << 20
	bomb, err := testcodec.DeflateBomb(decoded)
	require.NoError(t, err)
	assert.Less(t, len(bomb), decoded/500)
	out, err := testcodec.Deflate().Decompress(context.Background(), nil, bomb, decoded)
	require.NoError(t, err)
	assert.Len(t, out, decoded)
	_, err = testcodec.Deflate().Decompress(context.Background(), nil, bomb, decoded-1)
	assert.ErrorIs(t, err, spi.ErrDecodedTooLarge)
}

// cancelAfterFirstCheck is a context whose Err is nil at the first check
// and Canceled from the second on.
type cancelAfterFirstCheck struct {
	context.Context
	checks int
}

func (c *cancelAfterFirstCheck) Err() error {
	c.checks++
	if c.checks > 1 {
		return context.Canceled
	}
	return nil
}

// TestDeflateChecksItsContextEveryQuantum: a context that ends after the
// check before the start stops the decode at the first quantum.
func TestDeflateChecksItsContextEveryQuantum(t *testing.T) {
	body := compress(t, make([]byte, 3*spi.DecodeQuantum))
	ctx := &cancelAfterFirstCheck{Context: context.Background()}
	_, err := testcodec.Deflate().Decompress(ctx, nil, body, 3*spi.DecodeQuantum)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 2, ctx.checks, "checked before it started and at the first quantum")
}
