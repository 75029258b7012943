package protomsg_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"

	"github.com/sluicerpc/sluice/message/protomsg"
)

func TestProtoRoundTrip(t *testing.T) {
	c := protomsg.Codec[wrapperspb.StringValue]()
	assert.Equal(t, "proto", c.Name())
	b, err := c.AppendMarshal([]byte{0xff}, wrapperspb.String("hello"))
	require.NoError(t, err)
	assert.Equal(t, byte(0xff), b[0], "appends to dst")
	var got wrapperspb.StringValue
	require.NoError(t, c.Unmarshal(b[1:], &got))
	assert.True(t, proto.Equal(wrapperspb.String("hello"), &got))
}

func TestProtoRejectsBadInput(t *testing.T) {
	c := protomsg.Codec[wrapperspb.StringValue]()
	var v wrapperspb.StringValue
	assert.Error(t, c.Unmarshal([]byte{0x0a, 0x05, 'a'}, &v), "truncated length-delimited field")
	_, err := c.AppendMarshal(nil, nil)
	assert.ErrorContains(t, err, "nil")
}

func FuzzProtoUnmarshal(f *testing.F) {
	c := protomsg.Codec[wrapperspb.StringValue]()
	seed, _ := c.AppendMarshal(nil, wrapperspb.String("seed"))
	f.Add(seed)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		var v wrapperspb.StringValue
		if err := c.Unmarshal(data, &v); err != nil {
			return
		}
		b, err := c.AppendMarshal(nil, &v)
		require.NoError(t, err)
		var again wrapperspb.StringValue
		require.NoError(t, c.Unmarshal(b, &again))
		assert.True(t, proto.Equal(&v, &again))
	})
}
