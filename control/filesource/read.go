package filesource

import (
	"errors"
	"fmt"
	"io"
	"os"
)

// DefaultMaxSize is the largest file a Source reads unless
// Options.MaxSize says otherwise: 4 MiB, far more than any configuration
// document needs.
const DefaultMaxSize = 4 << 20

// ErrTooLarge is wrapped by the error of a file larger than
// Options.MaxSize: it is not read, and nothing of it is applied.
var ErrTooLarge = errors.New("larger than the configuration file bound")

// readFile reads the regular file at path, at most max bytes of it. It
// refuses anything else (a FIFO or a device would block or never end)
// without reading it.
func readFile(path string, max int64) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file (%s)", path, fi.Mode().Type())
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s: %w (more than %d bytes)", path, ErrTooLarge, max)
	}
	return b, nil
}
