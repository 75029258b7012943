package plugin

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/sluicerpc/sluice/plugin/internal/pb"
	"github.com/sluicerpc/sluice/spi"
)

// TestCodecErrorFitsTheReplyFraming: however long or ill-formed a codec's
// error text, it crosses as valid UTF-8 within the framing the host
// allows a reply beyond its bytes, and keeps its kind.
func TestCodecErrorFitsTheReplyFraming(t *testing.T) {
	long := fmt.Errorf("%s\xff%s: %w", strings.Repeat("é", 3000), "\xfe", spi.ErrCorrupt)
	e := toCodecError(long)
	assert.True(t, utf8.ValidString(e.GetMessage()))
	assert.LessOrEqual(t, len(e.GetMessage()), codecErrorText)
	assert.True(t, strings.HasSuffix(e.GetMessage(), cutMark))
	b, err := proto.Marshal(&pb.DecompressReply{Error: e})
	require.NoError(t, err)
	assert.LessOrEqual(t, len(b), codecReplyFraming)
	b, err = proto.Marshal(&pb.CompressReply{Error: e})
	require.NoError(t, err)
	assert.LessOrEqual(t, len(b), codecReplyFraming)
	assert.ErrorIs(t, fromCodecError(e), spi.ErrCorrupt)

	short := toCodecError(errors.New("bad \xff byte"))
	assert.Equal(t, "bad \uFFFD byte", short.GetMessage())
}

func TestCodecErrorKindsCross(t *testing.T) {
	for _, want := range []error{spi.ErrDecodedTooLarge, spi.ErrCorrupt, context.Canceled, context.DeadlineExceeded, errors.ErrUnsupported} {
		got := fromCodecError(toCodecError(fmt.Errorf("codec x: %w", want)))
		assert.ErrorIs(t, got, want)
		assert.Equal(t, "codec x: "+want.Error(), got.Error())
	}
	other := fromCodecError(toCodecError(errors.New("other")))
	var re *RemoteError
	require.ErrorAs(t, other, &re)
	assert.Nil(t, re.Cause)
}
