package admin_test

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAnUnauthenticatedBodyIsNeverRead (issue 26 section 2): a request
// without the token whose chunked body never ends gets its 401 at once,
// and the server closes the connection after it. Before, net/http went
// on draining the body after the 401, holding the connection until the
// read timeout (30 s with NewServer; forever without one).
func TestAnUnauthenticatedBodyIsNeverRead(t *testing.T) {
	a := newAPI(t)
	nc, err := net.Dial("tcp", strings.TrimPrefix(a.url, "http://"))
	require.NoError(t, err)
	defer nc.Close()
	_, err = io.WriteString(nc, "PUT /v1/config HTTP/1.1\r\nHost: sluice\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n")
	require.NoError(t, err)
	require.NoError(t, nc.SetReadDeadline(time.Now().Add(10*time.Second)))
	br := bufio.NewReader(nc)
	resp, err := http.ReadResponse(br, nil)
	require.NoError(t, err)
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusUnauthorized, resp.StatusCode)
	assert.True(t, resp.Close, "the answer says the connection closes")

	// The body is still open on our side; the server must not wait for it.
	_, err = br.ReadByte()
	var ne net.Error
	require.False(t, errors.As(err, &ne) && ne.Timeout(), "the server kept the connection to read the body: %v", err)
	require.Error(t, err)
}
