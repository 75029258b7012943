package codecs_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/codecs"
	"github.com/sluicerpc/sluice/spi"
)

func TestConfigDefaults(t *testing.T) {
	r, err := codecs.Config{}.Resolve()
	require.NoError(t, err)
	require.Equal(t, []string{"zstd", "s2", "gzip", "br"}, r.Names())
	require.Equal(t, codecs.DefaultPolicy(), r.Policy("svc/m"))
	require.Equal(t, codecs.DefaultMaxDecodedSize, r.MaxDecodedSize())
	require.Equal(t, codecs.DefaultDecodeFloor, r.DecodeLimit(10), "tiny frames decode to the floor at most")
	require.Equal(t, 100<<10*codecs.DefaultDecodeRatio, r.DecodeLimit(100<<10))
	require.Equal(t, codecs.DefaultMaxDecodedSize, r.DecodeLimit(4<<20), "capped by MaxDecodedSize")
	c, i, ok := r.Lookup("gzip")
	require.True(t, ok)
	require.Equal(t, 2, i)
	require.Equal(t, "gzip", c.Name())
	_, _, ok = r.Lookup("identity")
	require.False(t, ok)
}

func TestConfigOffAcceptsNothing(t *testing.T) {
	r, err := codecs.Config{Off: true, Codecs: []spi.Codec{codecs.Zstd()}}.Resolve()
	require.NoError(t, err)
	require.Empty(t, r.Names())
}

func TestConfigMethodsOverridePolicy(t *testing.T) {
	r, err := codecs.Config{Methods: map[string]codecs.Policy{"svc/big": {MinSize: 1 << 20}}}.Resolve()
	require.NoError(t, err)
	require.Equal(t, 1<<20, r.Policy("svc/big").MinSize)
	require.Equal(t, codecs.DefaultMinSaving, r.Policy("svc/big").MinSaving, "zero fields of an override are defaults")
	require.Equal(t, codecs.DefaultPolicy(), r.Policy("svc/other"))
}

func TestConfigCheckDeclared(t *testing.T) {
	r, err := codecs.Config{MaxDecodedSize: 8 << 20, DecodeRatio: 10, DecodeFloor: 1000}.Resolve()
	require.NoError(t, err)
	require.NoError(t, r.CheckDeclared(1000, 1))
	require.ErrorContains(t, r.CheckDeclared(1001, 1), "expansion bound")
	require.NoError(t, r.CheckDeclared(5000, 500))
	require.ErrorContains(t, r.CheckDeclared(8<<20+1, 1<<30), "maximum decoded size")
	off, err := codecs.Config{DecodeRatio: -1}.Resolve()
	require.NoError(t, err)
	require.NoError(t, off.CheckDeclared(codecs.DefaultMaxDecodedSize, 1), "a negative ratio disables the bound")
}

func TestConfigRejectsEveryBadField(t *testing.T) {
	_, err := codecs.Config{
		Codecs:         []spi.Codec{codecs.Zstd(), codecs.Zstd(), codecs.Identity(), nil},
		Policy:         codecs.Policy{MinSavingPercent: 100},
		Methods:        map[string]codecs.Policy{"a/b": {MinSaving: -1}},
		MaxDecodedSize: -1,
		DecodeFloor:    -1,
	}.Resolve()
	require.Error(t, err)
	for _, want := range []string{"listed twice", "identity needs no profile", "Codecs[3] is nil", "Config.Policy", `Methods["a/b"]`, "MaxDecodedSize", "DecodeFloor"} {
		require.True(t, strings.Contains(err.Error(), want), "missing %q in %v", want, err)
	}
	many := make([]spi.Codec, 17)
	for i := range many {
		many[i] = codecs.Zstd()
	}
	_, err = codecs.Config{Codecs: many}.Resolve()
	require.ErrorContains(t, err, "at most 16")
}
