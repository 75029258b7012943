package main

import (
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/control/admin"
)

const adminTestToken = "sluice-admin-test-token-0123456789"

// adminFixture is "sluice serve -admin" in process and the flags of
// "sluice admin" against it.
type adminFixture struct {
	t     *testing.T
	dir   string
	flags []string
	out   *syncBuffer
}

func serveWithAdmin(t *testing.T) *adminFixture {
	t.Helper()
	dir := t.TempDir()
	tf := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(tf, []byte(adminTestToken+"\n"), 0o600))
	adminAddr := freeAddr(t)
	_, out := serveInBackground(t, "-admin", adminAddr, "-admin-token-file", tf)
	require.Contains(t, out.String(), "sluice serve: admin API on http://"+adminAddr+"\n")
	require.Contains(t, out.String(), "sluice serve: dashboard at http://"+adminAddr+"/ui/ (paste the admin token)\n")
	return &adminFixture{t: t, dir: dir, flags: []string{"-addr", "http://" + adminAddr, "-token-file", tf}, out: out}
}

// file writes a document into the fixture's directory.
func (f *adminFixture) file(name, content string) string {
	f.t.Helper()
	p := filepath.Join(f.dir, name)
	require.NoError(f.t, os.WriteFile(p, []byte(content), 0o600))
	return p
}

func (f *adminFixture) admin(args ...string) (int, string, string) {
	return runCommand(append(append([]string{"admin"}, args...), f.flags...)...)
}

const adminDoc = `version: 1
server:
  admission:
    global:
      limits: [{kind: concurrency, limit: 2}]
  calls: {per_connection: 8}
`

// The whole round: get and status of the initial configuration, plan
// (diff view and JSON), put with the current generation, put of an
// invalid document (problems at their lines) and with a stale
// generation, disable, and a wrong token.
func TestAdminAgainstServe(t *testing.T) {
	f := serveWithAdmin(t)
	code, _, errOut := f.admin("get")
	assert.Equal(t, exitFail, code)
	assert.Contains(t, errOut, "sluice admin get: no configuration document in force: the server runs the configuration it was started with (generation 0)")
	code, out, errOut := f.admin("status")
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "generation 0 (in sync)\ndocument: none (the configuration the server was started with)\n")

	doc := f.file("sluice.yaml", adminDoc)
	code, out, errOut = f.admin("plan", doc)
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "plan against generation 0 (put with -if-match 0 applies exactly this); admission: enable\n")
	assert.Regexp(t, `(?m)^\+ global/concurrency \(concurrency, create\): limit 2, in use 0, waiting 0: .+$`, out)
	assert.Contains(t, out, "- Calls.PerConnection: 256\n+ Calls.PerConnection: 8\n  ")
	code, out, errOut = f.admin("plan", "-json", doc)
	require.Equal(t, exitOK, code, errOut)
	var p admin.Plan
	require.NoError(t, json.Unmarshal([]byte(out), &p), out)
	assert.True(t, p.Enable)
	require.Len(t, p.States, 1)
	assert.Equal(t, int64(2), p.States[0].NewLimit)

	code, out, errOut = f.admin("put", doc)
	require.Equal(t, exitOK, code, errOut)
	assert.Equal(t, "applied: generation 1 (from 0)\n", out)
	assert.Equal(t, "sluice admin put: -if-match not given: using the current generation 0\n", errOut)
	code, out, _ = f.admin("get")
	require.Equal(t, exitOK, code)
	assert.Equal(t, adminDoc, out)
	code, out, _ = f.admin("put", doc, "-if-match", "1")
	require.Equal(t, exitOK, code)
	assert.Equal(t, "unchanged: generation 1 (the document equals the one in force)\n", out)

	// A plan with -if-match, then a diff view of a resize.
	code, out, errOut = f.admin("plan", "-if-match", "1", f.file("resize.yaml", strings.Replace(adminDoc, "limit: 2", "limit: 5", 1)))
	require.Equal(t, exitOK, code, errOut)
	assert.Regexp(t, `(?m)^~ global/concurrency \(concurrency, reconfigure\): limit 2 -> 5, in use 0, waiting 0: .+$`, out)

	bad := f.file("bad.yaml", "version: 1\nserver:\n  calls:\n    per_conection: 8\n  streams: {window: -1}\n")
	code, out, errOut = f.admin("put", bad, "-if-match", "1")
	assert.Equal(t, exitFail, code)
	assert.Empty(t, out)
	assert.Contains(t, errOut, "sluice admin put: the document was rejected (2 problems); nothing changed:\n")
	assert.Contains(t, errOut, bad+":4:5: server.calls.per_conection: ")
	assert.Regexp(t, regexp.QuoteMeta(bad)+`:5:\d+: server\.streams\.window: `, errOut)

	code, _, errOut = f.admin("put", doc, "-if-match", "0")
	assert.Equal(t, exitFail, code)
	assert.Equal(t, "sluice admin put: the generation moved: the change was derived from 0, the server is at 1; nothing changed (get the configuration again)\n", errOut)

	code, out, errOut = f.admin("disable")
	require.Equal(t, exitOK, code, errOut)
	assert.Equal(t, "applied: generation 2 (from 1)\n", out)
	code, out, _ = f.admin("get")
	require.Equal(t, exitOK, code)
	assert.Equal(t, "version: 1\nserver:\n  calls: {per_connection: 8}\n", out)
	code, out, errOut = f.admin("status")
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "generation 2 (in sync)\ndocument: from admin 127.0.0.1:")
	assert.Contains(t, out, "last rejection: from admin")
	assert.Contains(t, out, "admin: applied=2 unchanged=1 rejected=2 retried=0\n")

	wrong := f.file("wrong-token", "not-the-right-token-at-all\n")
	code, _, errOut = runCommand("admin", "status", f.flags[0], f.flags[1], "-token-file", wrong)
	assert.Equal(t, exitFail, code)
	assert.Contains(t, errOut, "sluice admin status: 401 Unauthorized: invalid token")
}

// Bad command lines and a missing token are usage errors.
func TestAdminUsageErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"admin", "nope", "-token-file", "x"}, `unknown command "nope"`},
		{[]string{"admin", "put"}, "sluice admin put: want one FILE"},
		{[]string{"admin", "get", "extra"}, `sluice admin get: unexpected arguments: ["extra"]`},
		{[]string{"admin", "put", "f", "-if-match", "x"}, `-if-match "x": want a generation`},
	} {
		code, _, errOut := runCommand(c.args...)
		assert.Equal(t, exitUsage, code, c.args)
		assert.Contains(t, errOut, c.want, c.args)
	}
	t.Setenv(adminTokenEnv, "")
	code, _, errOut := runCommand("admin", "status")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errOut, "no token: give -token-file or set $SLUICE_ADMIN_TOKEN")
}

// The token from the environment.
func TestAdminTokenFromTheEnvironment(t *testing.T) {
	f := serveWithAdmin(t)
	t.Setenv(adminTokenEnv, adminTestToken)
	code, out, errOut := runCommand("admin", "status", f.flags[0], f.flags[1])
	require.Equal(t, exitOK, code, errOut)
	assert.Contains(t, out, "generation 0")
}

// serve refuses a non-loopback admin address and a short token, and
// starts nothing.
func TestServeAdminRefusals(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good")
	require.NoError(t, os.WriteFile(good, []byte(adminTestToken), 0o600))
	short := filepath.Join(dir, "short")
	require.NoError(t, os.WriteFile(short, []byte("short\n"), 0o600))
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-admin", "0.0.0.0:0", "-admin-token-file", good}, `-admin: admin: refusing to listen on "0.0.0.0:0": 0.0.0.0 is not a loopback address`},
		{[]string{"-admin", ":0", "-admin-token-file", good}, `refusing to listen on ":0": no host`},
		{[]string{"-admin", "127.0.0.1:0", "-admin-token-file", short}, "-admin-token-file: admin: token file " + short + ": the token (its first line) has 5 bytes, at least 16 required"},
	} {
		code, out, errOut := runCommand(append([]string{"serve", "-addr", freeAddr(t)}, c.args...)...)
		assert.Equal(t, exitFail, code, c.args)
		assert.Contains(t, errOut, c.want)
		assert.NotContains(t, out, "listening on")
	}
}

// An -admin address that cannot be bound stops serve at the start, naming
// the flag, before it listens for calls.
func TestServeAdminAddressInUse(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	tf := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(tf, []byte(adminTestToken+"\n"), 0o600))
	code, stdout, stderr := runCommand("serve", "-addr", freeAddr(t), "-admin", l.Addr().String(), "-admin-token-file", tf)
	assert.Equal(t, exitFail, code)
	assert.Contains(t, stderr, "sluice serve: -admin: admin: listen tcp "+l.Addr().String()+": bind: address already in use\n")
	assert.NotContains(t, stdout, "listening on")
}
