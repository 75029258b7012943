package codecs_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/codecs"
)

func TestPolicyBudget(t *testing.T) {
	p := codecs.DefaultPolicy()
	assert.Equal(t, -1, p.Budget(1023), "below 1024 bytes: not compressed")
	assert.Equal(t, 1024-64, p.Budget(1024), "64 bytes is more than 5%")
	assert.Equal(t, 10000-500, p.Budget(10000), "5% is more than 64 bytes")
	assert.Equal(t, -1, codecs.Policy{MinSize: -1}.Budget(1<<20), "a negative MinSize disables compression")
	assert.Equal(t, 100-64, codecs.Policy{MinSize: 100}.Budget(100))
	assert.NoError(t, p.Validate())
	assert.EqualError(t, codecs.Policy{MinSavingPercent: 100}.Validate(), "codecs: Policy.MinSavingPercent must be in [0, 99], got 100")
	assert.EqualError(t, codecs.Policy{MinSaving: -1}.Validate(), "codecs: Policy.MinSaving must not be negative, got -1")
}

// A body is compressed only when the result saves enough: the codec gets
// exactly the room the policy allows, so random bytes (which do not
// compress) and small bodies go as they are.
func TestPolicyCompress(t *testing.T) {
	p := codecs.DefaultPolicy()
	c := codecs.Zstd()
	text := bytes.Repeat([]byte(`{"user":"ada","items":[1,2,3]},`), 200)
	dst := make([]byte, 3, 3+len(text))
	copy(dst, "hdr")
	out, ok := p.Compress(c, dst, text)
	require.True(t, ok)
	assert.Equal(t, "hdr", string(out[:3]), "the caller's bytes are kept")
	assert.Less(t, len(out)-3, p.Budget(len(text))+1)
	back, err := c.Decompress(context.Background(), nil, out[3:], len(text))
	require.NoError(t, err)
	assert.Equal(t, text, back)

	random := make([]byte, 4096)
	_, _ = rand.Read(random)
	out, ok = p.Compress(c, make([]byte, 0, len(random)), random)
	assert.False(t, ok, "random bytes do not save 5%")
	assert.Empty(t, out)

	out, ok = p.Compress(c, make([]byte, 0, 2000), text[:1000])
	assert.False(t, ok, "below MinSize")
	assert.Empty(t, out)

	out, ok = p.Compress(c, make([]byte, 0, 10), text)
	assert.False(t, ok, "dst without room for the budget")
	assert.Empty(t, out)
}
