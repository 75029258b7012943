package endpointpolicy

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestWindowAdvance(t *testing.T) {
	var w window
	w.advance(100, 10) // starts the first bucket at 100
	w.add(1, 0)
	w.advance(95, 10) // earlier than the bucket: counts in it
	w.add(1, 0)
	w.advance(195, 10) // 9 rotations: the first bucket is the oldest
	w.add(0, 1)
	assert.Equal(t, bucket{2, 1}, w.sum)
	w.advance(200, 10) // the first bucket slides out
	assert.Equal(t, bucket{0, 1}, w.sum)
	assert.Equal(t, uint64(10), w.epoch)

	// A wider bucket (a live update) keeps the history.
	w.advance(250, 100)
	assert.Equal(t, bucket{0, 1}, w.sum)
	w.advance(1000, 100) // 8 wide rotations: the failure is 9 buckets back
	assert.Equal(t, bucket{0, 1}, w.sum)
	w.advance(1100, 100)
	assert.Equal(t, bucket{}, w.sum)
	w.advance(1<<62, 1)
	assert.Equal(t, bucket{}, w.sum)
}

func TestWindowWithdraw(t *testing.T) {
	var w window
	w.advance(0, 10)
	w.add(2, 0)
	first := w.epoch
	w.advance(30, 10)
	w.add(1, 0)
	w.withdrawA(first)
	assert.Equal(t, uint64(2), w.sum.a)
	w.withdrawA(first)
	w.withdrawA(first) // the bucket is empty: nothing
	assert.Equal(t, uint64(1), w.sum.a)
	w.withdrawA(w.epoch + 1) // a future epoch: nothing
	w.advance(200, 10)
	w.add(1, 0)
	w.withdrawA(first + 3) // slid out: nothing
	assert.Equal(t, uint64(1), w.sum.a)
	w.reset(300)
	assert.Equal(t, bucket{}, w.sum)
	w.withdrawA(w.epoch - 1)
	assert.Equal(t, bucket{}, w.sum)
}

func TestTokenLayout(t *testing.T) {
	tok := makeToken(maxEndpoints, slotMask, seqMask)
	assert.Equal(t, ^uint64(0), tok)
	assert.Equal(t, uint32(maxEndpoints), tokenEndpoint(tok))
	assert.Equal(t, uint32(slotMask), tokenSlot(tok))
	tok = makeToken(1, 0, 0)
	assert.NotZero(t, tok)
	assert.Equal(t, uint32(1), tokenEndpoint(tok))

	var tt ticketTable
	a, ok := tt.issue(3, 42)
	assert.True(t, ok)
	info, ok := tt.redeem(a)
	assert.True(t, ok)
	assert.Equal(t, uint64(42), info)
	_, ok = tt.redeem(a)
	assert.False(t, ok)
	b, _ := tt.issue(3, 7)
	assert.Equal(t, tokenSlot(a), tokenSlot(b), "the slot is reused")
	assert.NotEqual(t, a, b)
	_, ok = tt.redeem(a)
	assert.False(t, ok)
	assert.Equal(t, 1, tt.outstanding())
}
