package message_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/message"
)

type greeting struct {
	Name  string `json:"name"`
	Times int    `json:"times"`
}

func TestJSONRoundTrip(t *testing.T) {
	c := message.JSON[greeting]()
	assert.Equal(t, "json", c.Name())
	prefix := []byte("keep:")
	b, err := c.AppendMarshal(prefix, &greeting{Name: "ada", Times: 3})
	require.NoError(t, err)
	assert.Equal(t, `keep:{"name":"ada","times":3}`, string(b))
	var got greeting
	require.NoError(t, c.Unmarshal(b[len(prefix):], &got))
	assert.Equal(t, greeting{Name: "ada", Times: 3}, got)
}

func TestJSONRejectsBadInput(t *testing.T) {
	c := message.JSON[greeting]()
	for _, in := range []string{``, `{`, `{"name":1}`, `{"nope":1}`, `{"name":"a"} {}`, `[]`} {
		var g greeting
		assert.Error(t, c.Unmarshal([]byte(in), &g), "%q", in)
	}
	_, err := c.AppendMarshal(nil, nil)
	assert.ErrorContains(t, err, "nil")
}

func FuzzJSONUnmarshal(f *testing.F) {
	f.Add([]byte(`{"name":"ada","times":3}`))
	f.Add([]byte(`{}`))
	c := message.JSON[greeting]()
	f.Fuzz(func(t *testing.T, data []byte) {
		var g greeting
		if err := c.Unmarshal(data, &g); err != nil {
			return
		}
		b, err := c.AppendMarshal(nil, &g)
		require.NoError(t, err)
		var again greeting
		require.NoError(t, c.Unmarshal(b, &again))
		assert.Equal(t, g, again)
	})
}
