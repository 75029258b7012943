package admin_test

import (
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/control/admin"
)

// Loopback addresses are accepted; every interface and any other address
// are refused unless allowRemote.
func TestListenIsLoopbackOnlyByDefault(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:0", "127.0.0.2:0", "localhost:0"} {
		l, err := admin.Listen(addr, false)
		require.NoError(t, err, addr)
		ip := l.Addr().(*net.TCPAddr).IP
		assert.True(t, ip.IsLoopback(), "%s: %s", addr, ip)
		require.NoError(t, l.Close())
	}
	for addr, why := range map[string]string{
		":0":              "no host: every interface",
		"0.0.0.0:0":       "0.0.0.0 is not a loopback address",
		"[::]:0":          ":: is not a loopback address",
		"192.0.2.1:0":     "192.0.2.1 is not a loopback address",
		"[2001:db8::1]:0": "2001:db8::1 is not a loopback address",
	} {
		_, err := admin.Listen(addr, false)
		assert.ErrorContains(t, err, `admin: refusing to listen on "`+addr+`": `+why, addr)
	}
	_, err := admin.Listen("127.0.0.1", false)
	assert.ErrorContains(t, err, "missing port")
	// Allowed: the check is skipped (this address is not this machine's,
	// so the listen itself fails).
	_, err = admin.Listen("192.0.2.1:0", true)
	require.Error(t, err)
	assert.NotContains(t, err.Error(), "refusing")
}

// The token file's first line, trimmed, at least 16 bytes.
func TestReadToken(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
		return p
	}
	tok, err := admin.ReadToken(write("ok", "  0123456789abcdef \nsecond line\n"))
	require.NoError(t, err)
	assert.Equal(t, "0123456789abcdef", string(tok))
	_, err = admin.ReadToken(write("short", "0123456789abcde\n"))
	assert.ErrorContains(t, err, "has 15 bytes, at least 16 required")
	_, err = admin.ReadToken(write("empty", ""))
	assert.ErrorContains(t, err, "has 0 bytes")
	_, err = admin.ReadToken(filepath.Join(dir, "missing"))
	assert.ErrorContains(t, err, "admin: token file:")
}
