package reject

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/sluicerpc/sluice/bench/internal/payload"
)

// TestMain makes the test binary a reject server when Start re-runs it.
func TestMain(m *testing.M) {
	if kind := os.Getenv(ChildEnv); kind != "" {
		if err := ServeChild(kind, os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "reject server:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestTheFloodIsRefusedAndDecompressionsAreSeen floods each server
// briefly: every call is refused (Measure fails on any other answer), the
// server counts the refusals, sluice decompresses nothing, grpc-go's
// interceptor decompresses every refused call (so the harness does see
// decompressions where there are some), and its tap handle none.
func TestTheFloodIsRefusedAndDecompressionsAreSeen(t *testing.T) {
	body := payload.JSON(64 << 10)
	for _, kind := range Kinds {
		t.Run(kind, func(t *testing.T) {
			tg, err := Start(kind)
			if err != nil {
				t.Fatal(err)
			}
			defer tg.Close()
			r, err := tg.Measure(body, 4, 20*time.Millisecond, 200*time.Millisecond)
			if err != nil {
				t.Fatal(err)
			}
			if r.Refused == 0 || r.ServerCPU <= 0 || r.Compressed <= 0 || r.Compressed >= len(body) {
				t.Fatalf("refused %d, server CPU %v, compressed body %d bytes: nothing measured", r.Refused, r.ServerCPU, r.Compressed)
			}
			switch kind {
			case GRPCInterceptor:
				// Calls in flight at either snapshot may be counted on one
				// side of it only.
				if d := int64(r.Decompressions) - int64(r.Refused); d < -4 || d > 4 {
					t.Fatalf("%d decompressions for %d refused calls, want one each", r.Decompressions, r.Refused)
				}
			default:
				if r.Decompressions != 0 {
					t.Fatalf("%d decompressions for %d refused calls, want none", r.Decompressions, r.Refused)
				}
			}
		})
	}
}
