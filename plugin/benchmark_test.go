package plugin_test

import (
	"testing"
	"time"

	"github.com/sluicerpc/sluice/plugin"
	"github.com/sluicerpc/sluice/plugin/internal/testkind"
	"github.com/sluicerpc/sluice/spi"
)

func benchmarkAcquireRelease(b *testing.B, k spi.LimiterKind) {
	now := time.Unix(1, 0)
	l, err := k.New(testkind.Params(1), now)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if !l.TryAcquire(now, 1).Granted {
			b.Fatal("refused")
		}
		l.Release(now, 1)
	}
}

// BenchmarkAcquireReleaseInProcess is one TryAcquire+Release through the
// gRPC bridge without a process boundary.
func BenchmarkAcquireReleaseInProcess(b *testing.B) {
	benchmarkAcquireRelease(b, plugin.ConnectInProcess(b, testkind.Kind{}))
}

// BenchmarkAcquireReleaseSubprocess is one TryAcquire+Release to the test
// plugin binary.
func BenchmarkAcquireReleaseSubprocess(b *testing.B) {
	k, err := plugin.LoadLimiterKind(pluginPath, plugin.WithLogger(quietLogger()))
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = k.Close() }()
	benchmarkAcquireRelease(b, k)
}

// BenchmarkAcquireReleaseDirect is the same pair on the limiter itself.
func BenchmarkAcquireReleaseDirect(b *testing.B) {
	benchmarkAcquireRelease(b, testkind.Kind{})
}
