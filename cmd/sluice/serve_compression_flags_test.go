package main

import (
	"flag"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/codecs"
	"github.com/sluicerpc/sluice/kernel/governor"
)

func TestServeCompressionFlagErrorsNameTheFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-codecs", "zstd,lz4"}, `-codecs: unknown codec "lz4" (known: zstd, s2, gzip, br, or none)`},
		{[]string{"-codecs", "gzip,gzip"}, `-codecs: "gzip" listed twice (known: zstd, s2, gzip, br, or none)`},
		{[]string{"-codecs", "identity"}, `-codecs: identity needs no profile (uncompressed bodies are always understood) (known: zstd, s2, gzip, br, or none)`},
		{[]string{"-codecs", ""}, "-codecs must name at least one codec, or be none"},
		{[]string{"-compress-min-size", "-2"}, "-compress-min-size must be -1 (never) or at least 0, got -2"},
		{[]string{"-max-decoded-size", "0"}, "-max-decoded-size must be positive, got 0"},
		{[]string{"-max-decoded-size", "4294967296"}, "-max-decoded-size must be at most 4294967295, got 4294967296"},
		{[]string{"-decode-ratio", "-1"}, "-decode-ratio must not be negative (0: no ratio bound), got -1"},
		{[]string{"-decode-floor", "0"}, "-decode-floor must be positive, got 0"},
		{[]string{"-max-decodes", "0"}, "-max-decodes must be positive, got 0"},
		{[]string{"-max-retained-bytes", "-1"}, "-max-retained-bytes must be positive, got -1"},
		{[]string{"-max-decoded-bytes", "0"}, "-max-decoded-bytes must be positive, got 0"},
	} {
		t.Run(strings.Join(tc.args, "_"), func(t *testing.T) {
			code, stdout, stderr := serveBriefly(t, tc.args...)
			assert.Equal(t, exitUsage, code)
			assert.Equal(t, "sluice serve: "+tc.want, firstLine(stderr))
			assert.Empty(t, stdout, "the server never started")
		})
	}
}

func TestServeCompressionOptionsMapping(t *testing.T) {
	o := serveOptions{MaxFrameSize: 8192, Compression: compressionFlags{
		Codecs: "s2, gzip", MinSize: 0, MaxDecodedSize: 1 << 20, DecodeRatio: 0, DecodeFloor: 4096,
	}, MaxDecodes: 3, MaxRetainedBytes: 1000, MaxDecodedBytes: 2000}
	so := o.serverOptions()
	r, err := so.Compression.Resolve()
	require.NoError(t, err)
	assert.Equal(t, []string{"s2", "gzip"}, r.Names())
	assert.Equal(t, 1, r.Policy("echo/Say").MinSize, "-compress-min-size 0: every body")
	assert.Equal(t, 1<<20, r.MaxDecodedSize())
	assert.Equal(t, 1<<20, r.DecodeLimit(1), "-decode-ratio 0: only -max-decoded-size bounds a body")
	assert.Equal(t, governor.Limits{Decodes: 3, RetainedBytes: 1000, DecodedBytes: 2000}, so.Governor)
	assert.Equal(t, uint32(1<<20), so.Limits.MaxDecodedSize, "Limits.MaxDecodedSize bounds decoded bodies too: it follows the flag")

	o.Compression = compressionFlags{Codecs: "none", MinSize: -1, MaxDecodedSize: 10, DecodeRatio: 4, DecodeFloor: 5}
	c := o.serverOptions().Compression
	assert.True(t, c.Off)
	assert.Equal(t, -1, c.Policy.MinSize)
	assert.Equal(t, 4, c.DecodeRatio)

	assert.Equal(t, "zstd,s2,gzip,br", defaultCodecList())
	var def serveOptions
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	serveFlags(fs, &def)
	require.NoError(t, fs.Parse(nil))
	r, err = def.serverOptions().Compression.Resolve()
	require.NoError(t, err)
	assert.Equal(t, []string{"zstd", "s2", "gzip", "br"}, r.Names())
	assert.Equal(t, codecs.DefaultPolicy(), r.Policy(""))
	assert.Equal(t, governor.DefaultLimits().Decodes, def.MaxDecodes)
}
