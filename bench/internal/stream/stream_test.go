package stream

import (
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// TestSystemsMoveEveryMessage runs each system's two shapes briefly at
// each size: every call moves its burst, every message has its size.
func TestSystemsMoveEveryMessage(t *testing.T) {
	for _, sys := range []System{GRPC(), Sluice()} {
		s, stop, err := sys.Start()
		if err != nil {
			t.Fatalf("%s: %v", sys.Name, err)
		}
		for _, kind := range []Kind{ServerStreaming, Bidi} {
			for _, size := range []int{64, 1024, 64 << 10} {
				r, err := Measure(sys.Name, s, kind, size, 20*time.Millisecond)
				if err != nil {
					t.Fatal(err)
				}
				if r.Messages == 0 || r.Messages%int64(burst(size)) != 0 {
					t.Errorf("%s %s %d B: %d messages, not whole bursts of %d", sys.Name, kind, size, r.Messages, burst(size))
				}
				t.Logf("%s %s %d B: %.0f msgs/s, %.1f MB/s", sys.Name, kind, size, r.MessagesPerSecond(), r.MBPerSecond())
			}
		}
		stop()
	}
}

func TestFillRequestsAreBounded(t *testing.T) {
	if _, _, err := parseFill(fillRequest(1<<21, 1)); err == nil {
		t.Error("2M messages accepted")
	}
	if _, _, err := parseFill(fillRequest(1, 8<<20)); err == nil {
		t.Error("an 8 MiB message accepted")
	}
	if _, _, err := parseFill([]byte{1, 2}); err == nil {
		t.Error("a short request accepted")
	}
	n, size, err := parseFill(fillRequest(7, 9))
	if err != nil || n != 7 || size != 9 {
		t.Errorf("parseFill = %d, %d, %v", n, size, err)
	}
}
