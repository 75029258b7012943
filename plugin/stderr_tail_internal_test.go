package plugin

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestStderrTailKeepsTheEnd(t *testing.T) {
	var s stderrTail
	_, _ = s.Write([]byte("  first line\n"))
	assert.Equal(t, "first line", s.String())
	long := strings.Repeat("x", stderrTailSize)
	n, err := s.Write([]byte(long + "\nlast line\n"))
	assert.NoError(t, err)
	assert.Equal(t, len(long)+len("\nlast line\n"), n, "Write reports every byte written")
	got := s.String()
	assert.True(t, strings.HasSuffix(got, "\nlast line"), "%q", got[len(got)-20:])
	assert.LessOrEqual(t, len(got), stderrTailSize)
	assert.NotContains(t, got, "first line")
}
