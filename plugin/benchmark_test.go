package plugin_test

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	goplugin "github.com/hashicorp/go-plugin"

	"github.com/sluicerpc/sluice/plugin"
	"github.com/sluicerpc/sluice/plugin/internal/pb"
	"github.com/sluicerpc/sluice/plugin/internal/rawecho"
	"github.com/sluicerpc/sluice/plugin/internal/testkind"
	"github.com/sluicerpc/sluice/spi"
)

// BenchmarkPluginBridge measures one TryAcquire+Release pair:
//
//   - direct: on testkind's limiter itself;
//   - bridge-in-process / bridge-subprocess: through the bridge, over
//     go-plugin's in-process test connection or to the test plugin binary;
//   - raw-in-process / raw-subprocess: the same two gRPC calls with the
//     same messages over the same kind of go-plugin connection, answered by
//     rawecho with no bridge logic on either side.
//
// The bridge's own cost is bridge-X minus raw-X; docs/benchmarks.md
// records the ratio.
func BenchmarkPluginBridge(b *testing.B) {
	b.Run("direct", func(b *testing.B) {
		benchmarkAcquireRelease(b, testkind.Kind{})
	})
	b.Run("bridge-in-process", func(b *testing.B) {
		benchmarkAcquireRelease(b, plugin.ConnectInProcess(b, testkind.Kind{}, plugin.WithLogger(quietLogger())))
	})
	b.Run("raw-in-process", func(b *testing.B) {
		client, _ := goplugin.TestPluginGRPCConn(b, false, goplugin.PluginSet{rawecho.Name: &rawecho.Plugin{}})
		b.Cleanup(func() { _ = client.Close() })
		benchmarkRaw(b, dispenseRaw(b, client))
	})
	b.Run("bridge-subprocess", func(b *testing.B) {
		k, err := plugin.LoadLimiterKind(pluginPath, plugin.WithLogger(quietLogger()))
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = k.Close() })
		benchmarkAcquireRelease(b, k)
	})
	b.Run("raw-subprocess", func(b *testing.B) {
		cmd := exec.Command(pluginPath)
		cmd.Env = append(os.Environ(), modeEnv+"=raw")
		c := goplugin.NewClient(&goplugin.ClientConfig{
			HandshakeConfig:  plugin.Handshake,
			Plugins:          goplugin.PluginSet{rawecho.Name: &rawecho.Plugin{}},
			Cmd:              cmd,
			AllowedProtocols: []goplugin.Protocol{goplugin.ProtocolGRPC},
			Logger:           quietLogger(),
		})
		b.Cleanup(c.Kill)
		rc, err := c.Client()
		if err != nil {
			b.Fatal(err)
		}
		benchmarkRaw(b, dispenseRaw(b, rc))
	})
}

func dispenseRaw(b *testing.B, c goplugin.ClientProtocol) pb.LimiterKindClient {
	raw, err := c.Dispense(rawecho.Name)
	if err != nil {
		b.Fatal(err)
	}
	return raw.(pb.LimiterKindClient)
}

// benchmarkAcquireRelease is one TryAcquire+Release per op on a limiter of
// k with limit 1, so every acquire must be granted.
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

// benchmarkRaw sends the bridge's two messages, as the bridge builds them,
// and checks the grant.
func benchmarkRaw(b *testing.B, rpc pb.LimiterKindClient) {
	ctx := context.Background()
	now := time.Unix(1, 0)
	b.ReportAllocs()
	for b.Loop() {
		r, err := rpc.TryAcquire(ctx, &pb.UnitsRequest{Id: 1, Now: &pb.Time{Set: true, UnixNano: now.UnixNano()}, N: 1})
		if err != nil || !r.GetGranted() {
			b.Fatal("refused", err)
		}
		if _, err := rpc.Release(ctx, &pb.UnitsRequest{Id: 1, Now: &pb.Time{Set: true, UnixNano: now.UnixNano()}, N: 1}); err != nil {
			b.Fatal(err)
		}
	}
}
