package etcdsource_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a source, or an etcd client, leaves a
// goroutine behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
