package plugin

import (
	"strings"
	"sync"
)

// stderrTailSize is how much of a plugin's last stderr output the host
// keeps to explain a failed start.
const stderrTailSize = 4 << 10

// stderrTail keeps the last stderrTailSize bytes written to it. go-plugin
// writes the plugin's stderr lines to it (besides the logger) from its own
// goroutine.
type stderrTail struct {
	mu  sync.Mutex
	buf []byte
}

func (s *stderrTail) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf = append(s.buf, p...)
	if over := len(s.buf) - stderrTailSize; over > 0 {
		s.buf = append(s.buf[:0], s.buf[over:]...)
	}
	return len(p), nil
}

// String returns the kept output without surrounding blank space.
func (s *stderrTail) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.TrimSpace(string(s.buf))
}
