package client

import (
	"github.com/sluicerpc/sluice/codecs"
	"github.com/sluicerpc/sluice/protocol"
)

// CallOption changes how one call is made.
//
// Options are applied by value (apply returns the changed copy), so that
// applying them does not move a call's options to the heap.
type CallOption interface{ apply(callOptions) callOptions }

type callOptions struct {
	maxAttempts  int
	idempotent   bool
	waitForReady bool               // readiness.go
	md           []string           // WithMetadata pairs
	respMD       *protocol.Metadata // ResponseMetadata

	compression    codecs.Policy // Compression, NoCompression (compression_option.go)
	compressionSet bool
}

// Idempotent declares that the call may run more than once without harm:
// it is then also retried after a lost connection or an Unavailable answer
// (see the package documentation for the retries that are always safe).
func Idempotent() CallOption { return idempotentOption{} }

type idempotentOption struct{}

func (idempotentOption) apply(o callOptions) callOptions { o.idempotent = true; return o }

// MaxAttempts bounds the attempts of this call, first attempt included;
// n < 1 means 1.
func MaxAttempts(n int) CallOption { return maxAttemptsOption(max(n, 1)) }

type maxAttemptsOption int

func (n maxAttemptsOption) apply(o callOptions) callOptions { o.maxAttempts = int(n); return o }
