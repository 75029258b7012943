package plugin_test

import (
	"bytes"
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/plugin"
	"github.com/sluicerpc/sluice/plugin/internal/testcodec"
	"github.com/sluicerpc/sluice/spi"
)

// openCodecs starts the test plugin serving the codecs of testcodec.
func openCodecs(t *testing.T) *plugin.Plugin {
	t.Helper()
	t.Setenv(modeEnv, "codecs")
	p, err := plugin.Open(pluginPath, plugin.WithLogger(quietLogger()))
	require.NoError(t, err)
	t.Cleanup(func() { _ = p.Close() })
	return p
}

func codec(t *testing.T, p *plugin.Plugin, name string) *plugin.CodecClient {
	t.Helper()
	c, err := p.Codec(name)
	require.NoError(t, err)
	return c
}

// payload is n bytes that compress well but not to nothing.
func payload(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i / 7 % 251)
	}
	return b
}

func TestCodecsAreListed(t *testing.T) {
	p := openCodecs(t)
	var names []string
	for _, c := range p.Codecs() {
		names = append(names, c.Name())
		assert.Same(t, p, c.Plugin())
	}
	assert.Equal(t, []string{testcodec.DeflateName, testcodec.BlockingName, testcodec.UnboundedName, testcodec.GrowingName, testcodec.PanickingName, testcodec.TrailingName}, names)
	assert.Empty(t, p.LimiterKinds(), "a binary of codecs alone serves no limiter kind")
	assert.Empty(t, p.EndpointPolicies())
	assert.True(t, codec(t, p, testcodec.DeflateName).HasBomb())
	assert.False(t, codec(t, p, testcodec.BlockingName).HasBomb())
	_, err := p.Codec("nope")
	assert.ErrorContains(t, err, `no codec "nope"`)
	assert.ErrorContains(t, err, testcodec.DeflateName, "the error lists what the plugin serves")
}

// TestPluginWithoutCodecsServesNone: a binary that serves no codec (here
// kinds and a policy) lists none.
func TestPluginWithoutCodecsServesNone(t *testing.T) {
	p, err := plugin.Open(pluginPath, plugin.WithLogger(quietLogger()))
	require.NoError(t, err)
	defer func() { _ = p.Close() }()
	assert.Empty(t, p.Codecs())
}

func TestOpenCodecChoosesACodec(t *testing.T) {
	t.Setenv(modeEnv, "codecs")
	_, err := plugin.OpenCodec(pluginPath, plugin.WithLogger(quietLogger()))
	assert.ErrorContains(t, err, "serves 6 codecs")
	assert.ErrorContains(t, err, "WithCodec")
	_, err = plugin.OpenCodec(pluginPath, plugin.WithLogger(quietLogger()), plugin.WithCodec("nope"))
	assert.ErrorContains(t, err, `no codec "nope"`)

	c, err := plugin.OpenCodec(pluginPath, plugin.WithLogger(quietLogger()), plugin.WithCodec(testcodec.DeflateName))
	require.NoError(t, err)
	assert.Equal(t, testcodec.DeflateName, c.Name())
	require.NoError(t, c.Close())
	_, err = c.Decompress(context.Background(), nil, []byte{1}, 1)
	assert.ErrorIs(t, err, plugin.ErrPluginUnavailable, "closing the codec closed its plugin")
}

// TestCodecRoundTripCrossesTheBridge: bodies compressed in the plugin
// decode in the host's own copy of the codec and back, over sizes up to
// more than gRPC's default message bound (4 MiB), into dst's spare room
// after the caller's bytes.
func TestCodecRoundTripCrossesTheBridge(t *testing.T) {
	p := openCodecs(t)
	c := codec(t, p, testcodec.DeflateName)
	local := testcodec.Deflate()
	for _, n := range []int{0, 1, 1000, spi.DecodeQuantum + 1, 5 << 20} {
		src := payload(n)
		room := make([]byte, 3, 3+n+1024)
		copy(room, "abc")
		out, fits, err := c.Compress(room, src)
		require.NoError(t, err, "size %d", n)
		require.True(t, fits, "size %d", n)
		assert.Equal(t, "abc", string(out[:3]))
		assert.Same(t, &room[:1][0], &out[:1][0], "size %d: compressed into dst's own room", n)
		body := out[3:]

		decoded, err := local.Decompress(context.Background(), nil, body, n)
		require.NoError(t, err, "size %d: the plugin's body decodes here", n)
		assert.True(t, bytes.Equal(src, decoded), "size %d", n)

		mine, _, err := local.Compress(make([]byte, 0, n+1024), src)
		require.NoError(t, err)
		got, err := c.Decompress(context.Background(), []byte("xy"), mine, n)
		require.NoError(t, err, "size %d", n)
		assert.Equal(t, "xy", string(got[:2]))
		assert.True(t, bytes.Equal(src, got[2:]), "size %d: decoded in the plugin", n)
	}
	assert.Zero(t, p.Failures())
}

// TestCodecCompressNeverGrowsDst: "would not fit" crosses as false with
// dst unchanged, and a codec in the plugin that grows its buffer cannot
// make the host grow dst.
func TestCodecCompressNeverGrowsDst(t *testing.T) {
	p := openCodecs(t)
	src := payload(100000)
	for _, name := range []string{testcodec.DeflateName, testcodec.GrowingName} {
		dst := make([]byte, 2, 40)
		out, fits, err := codec(t, p, name).Compress(dst, src)
		assert.False(t, fits, name)
		assert.Equal(t, len(dst), len(out), name)
		assert.Equal(t, cap(dst), cap(out), name)
		assert.Same(t, &dst[0], &out[0], name)
		if name == testcodec.GrowingName {
			assert.ErrorContains(t, err, "room", "the broken codec's answer is refused")
		} else {
			assert.NoError(t, err)
		}
	}
	assert.Zero(t, p.Failures(), "a codec's answer is not a failure to reach the plugin")
}

// TestCodecDecompressRespectsTheLimit: the plugin's codec refuses past the
// limit with an error the host recognizes, and a codec in the plugin that
// ignores the limit cannot hand the host more than it: the host counts the
// pieces it reads (each at most a quantum) and refuses the one that passes
// the limit.
func TestCodecDecompressRespectsTheLimit(t *testing.T) {
	p := openCodecs(t)
	body, _, err := testcodec.Deflate().Compress(make([]byte, 0, 20000), payload(10000))
	require.NoError(t, err)
	dst := []byte("keep")
	for _, tc := range []struct {
		name  string
		limit int
		says  string // how the refusal reads
	}{
		{testcodec.DeflateName, 9999, "more than 9999 decoded bytes"},
		{testcodec.DeflateName, 0, "more than 0 decoded bytes"},
		{testcodec.UnboundedName, 9999, "answered at least 10000 decoded bytes, more than the limit 9999"},
		{testcodec.UnboundedName, 100, "answered at least 10000 decoded bytes, more than the limit 100"},
		{testcodec.UnboundedName, 0, "answered at least 10000 decoded bytes, more than the limit 0"},
	} {
		got, err := codec(t, p, tc.name).Decompress(context.Background(), dst, body, tc.limit)
		assert.ErrorIs(t, err, spi.ErrDecodedTooLarge, "%s limit %d", tc.name, tc.limit)
		assert.ErrorContains(t, err, tc.says, "%s limit %d", tc.name, tc.limit)
		assert.Equal(t, dst, got, "%s limit %d", tc.name, tc.limit)
	}
	got, err := codec(t, p, testcodec.UnboundedName).Decompress(context.Background(), nil, body, 10000)
	require.NoError(t, err, "at the limit")
	assert.Len(t, got, 10000)
	assert.Zero(t, p.Failures())
}

func TestCodecCorruptInputCrossesAsCorrupt(t *testing.T) {
	p := openCodecs(t)
	c := codec(t, p, testcodec.DeflateName)
	body, _, err := testcodec.Deflate().Compress(make([]byte, 0, 2000), payload(1000))
	require.NoError(t, err)
	for what, src := range map[string][]byte{
		"truncated": body[:len(body)-1],
		"trailing":  append(body[:len(body):len(body)], 0),
		"garbage":   {0xff, 0xfe, 0xfd},
		"empty":     {},
	} {
		got, err := c.Decompress(context.Background(), []byte("k"), src, 1000)
		assert.ErrorIs(t, err, spi.ErrCorrupt, what)
		assert.NotErrorIs(t, err, plugin.ErrPluginUnavailable, what)
		var re *plugin.RemoteError
		assert.ErrorAs(t, err, &re, what)
		assert.Equal(t, []byte("k"), got, what)
	}
	assert.Zero(t, p.Failures())
}

// TestCodecHostCancellationStopsThePluginsDecode: cancelling the host's
// ctx ends the context of the decode running in the plugin; the plugin
// itself says so (Blocking's Stopped request).
func TestCodecHostCancellationStopsThePluginsDecode(t *testing.T) {
	p := openCodecs(t)
	c := codec(t, p, testcodec.BlockingName)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := c.Decompress(ctx, nil, []byte(testcodec.Wait), 10)
		done <- err
	}()
	guard, stop := context.WithTimeout(context.Background(), waitLimit)
	defer stop()
	_, err := c.Decompress(guard, nil, []byte(testcodec.Entered), 10)
	require.NoError(t, err, "the plugin began the decode")
	cancel()
	require.ErrorIs(t, <-done, context.Canceled)
	seen, err := c.Decompress(guard, nil, []byte(testcodec.Stopped), 100)
	require.NoError(t, err)
	assert.Equal(t, context.Canceled.Error(), string(seen), "the decode's context ended in the plugin")
	assert.Zero(t, p.Failures(), "a cancellation is not a failure to reach the plugin")

	_, err = c.Decompress(ctx, nil, []byte(testcodec.Wait), 10)
	assert.ErrorIs(t, err, context.Canceled, "a ctx done before the call fails it at once")
}

// TestCodecHostDeadlineCrosses: the decode in the plugin runs under the
// host's deadline (to gRPC's timeout precision, give or take the time the
// call took), and has none when the host's ctx has none.
func TestCodecHostDeadlineCrosses(t *testing.T) {
	p := openCodecs(t)
	c := codec(t, p, testcodec.BlockingName)
	got, err := c.Decompress(context.Background(), nil, []byte(testcodec.Deadline), 100)
	require.NoError(t, err)
	assert.Equal(t, "none", string(got))

	deadline := time.Now().Add(time.Hour)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	got, err = c.Decompress(ctx, nil, []byte(testcodec.Deadline), 100)
	require.NoError(t, err)
	nanos, err := strconv.ParseInt(string(got), 10, 64)
	require.NoError(t, err, "%q", got)
	assert.WithinDuration(t, deadline, time.Unix(0, nanos), waitLimit)
}

// TestCodecPanicInPluginIsReraisedInHost follows the bridge's rule for
// every implementation (TestPanicInPluginIsReraisedInHost): the panic is
// re-raised in the host's caller and the plugin keeps serving.
func TestCodecPanicInPluginIsReraisedInHost(t *testing.T) {
	p := openCodecs(t)
	assert.PanicsWithValue(t, testcodec.PanicMessage, func() {
		_, _ = codec(t, p, testcodec.PanickingName).Decompress(context.Background(), nil, []byte{1}, 10)
	})
	body, _, err := testcodec.Deflate().Compress(make([]byte, 0, 100), []byte("still serving"))
	require.NoError(t, err)
	got, err := codec(t, p, testcodec.DeflateName).Decompress(context.Background(), nil, body, 100)
	require.NoError(t, err)
	assert.Equal(t, "still serving", string(got))
}

func TestCodecBombCrosses(t *testing.T) {
	p := openCodecs(t)
	c := codec(t, p, testcodec.DeflateName)
	const decoded = 64 << 20
	bomb, err := c.Bomb(decoded)
	require.NoError(t, err)
	assert.Less(t, len(bomb), decoded/500, "a bomb is small")
	_, err = c.Decompress(context.Background(), nil, bomb, 1<<20)
	assert.ErrorIs(t, err, spi.ErrDecodedTooLarge, "refused in the plugin")
	got, err := testcodec.Deflate().Decompress(context.Background(), nil, bomb, decoded)
	require.NoError(t, err, "the bomb is one complete body of exactly decoded bytes")
	assert.Len(t, got, decoded)

	_, err = codec(t, p, testcodec.BlockingName).Bomb(10)
	assert.ErrorIs(t, err, plugin.ErrNoBomb)
	_, err = codec(t, p, testcodec.PanickingName).Bomb(10)
	assert.ErrorContains(t, err, testcodec.ErrNoBombHere.Error(), "the builder's error crosses")
	assert.Zero(t, p.Failures())
}

// TestCodecHungDecodeFailsPerTheCallTimeout: a decode the plugin leaves
// unanswered fails after the call timeout like any hung call, and its
// context in the plugin ends. The call watch is driven by hand
// (WithManualCallWatch), as in TestCallTimeoutFailsAHungCall.
func TestCodecHungDecodeFailsPerTheCallTimeout(t *testing.T) {
	blocking := testcodec.NewBlocking()
	p := plugin.ConnectInProcessConfig(t, plugin.ServeConfig{Codecs: []plugin.CodecEntry{{Codec: blocking}}, Logger: quietLogger()},
		plugin.WithLogger(quietLogger()), plugin.WithCallTimeout(waitLimit), plugin.WithManualCallWatch())
	c := codec(t, p, testcodec.BlockingName)
	done := make(chan error, 1)
	go func() {
		_, err := c.Decompress(context.Background(), nil, []byte(testcodec.Wait), 10)
		done <- err
	}()
	_, err := c.Decompress(context.Background(), nil, []byte(testcodec.Entered), 10)
	require.NoError(t, err)
	for i := range plugin.CallWatchTicks {
		require.Zero(t, plugin.TickCallWatch(p), "failed before the call timeout (tick %d)", i+1)
	}
	require.Equal(t, 1, plugin.TickCallWatch(p), "a full timeout past the call: overdue")
	err = <-done
	require.ErrorIs(t, err, plugin.ErrPluginUnavailable)
	assert.ErrorContains(t, err, "no answer within the call timeout")
	assert.ErrorContains(t, err, `codec "`+testcodec.BlockingName+`"`)
	assert.NotErrorIs(t, err, context.Canceled, "the host's ctx did not end")
	seen, err := c.Decompress(context.Background(), nil, []byte(testcodec.Stopped), 100)
	require.NoError(t, err)
	assert.Equal(t, context.Canceled.Error(), string(seen), "the decode's context ended in the plugin")
	assert.Equal(t, uint64(1), p.Failures())
}

func TestServeConfigValidateCodecs(t *testing.T) {
	for _, tt := range []struct {
		name   string
		codecs []plugin.CodecEntry
		want   string
	}{
		{"one", []plugin.CodecEntry{{Codec: testcodec.Deflate()}}, ""},
		{"nil codec", []plugin.CodecEntry{{}}, "Codecs[0].Codec is nil"},
		{"twice", []plugin.CodecEntry{{Codec: testcodec.Deflate()}, {Codec: testcodec.Deflate()}}, "served twice"},
		{"invalid name", []plugin.CodecEntry{{Codec: renamedCodec{testcodec.Deflate(), "Gzip!"}}}, `invalid name "Gzip!"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := plugin.ServeConfig{Codecs: tt.codecs}.Validate()
			if tt.want == "" {
				assert.NoError(t, err)
				return
			}
			assert.ErrorContains(t, err, tt.want)
		})
	}
}

type renamedCodec struct {
	spi.Codec
	name string
}

func (c renamedCodec) Name() string { return c.name }
