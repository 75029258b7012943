// Command testplugin serves test kinds over the plug-in bridge; the plugin
// package's tests build and load it. SLUICE_TESTPLUGIN_MODE selects what it
// serves:
//
//	""         testkind.Kind with its capabilities, and the endpoint
//	           policy testpolicy.New with its capabilities
//	"policies" the endpoint policy alone
//	"multi"    testkind.Kind with capabilities, and the same limiter
//	           under a second name without
//	"invalid"  a configuration Serve refuses (one kind served twice)
//	"raw"      the rawecho baseline of BenchmarkPluginBridge
//	"codecs"   the codecs of testcodec: the reference Deflate with its
//	           bomb builder, and the probes Blocking, Unbounded, Growing
//	           and Panicking (whose bomb builder fails), and the broken
//	           Trailing with Deflate's bomb builder
package main

import (
	"os"

	goplugin "github.com/hashicorp/go-plugin"

	"github.com/sluicerpc/sluice/plugin"
	"github.com/sluicerpc/sluice/plugin/internal/rawecho"
	"github.com/sluicerpc/sluice/plugin/internal/testcodec"
	"github.com/sluicerpc/sluice/plugin/internal/testkind"
	"github.com/sluicerpc/sluice/plugin/internal/testpolicy"
)

// ModeEnv names the environment variable that selects the mode.
const ModeEnv = "SLUICE_TESTPLUGIN_MODE"

// SecondName is the second kind's name in mode "multi".
const SecondName = "plugintest.second"

// renamed is testkind.Kind under another name.
type renamed struct{ testkind.Kind }

func (renamed) Name() string { return SecondName }

func main() {
	caps := testkind.Capabilities()
	primary := plugin.LimiterKindEntry{Kind: testkind.Kind{}, Capabilities: &caps}
	pcaps := testpolicy.Capabilities()
	policy := plugin.EndpointPolicyEntry{Name: testpolicy.Name, New: testpolicy.New, Capabilities: &pcaps}
	switch os.Getenv(ModeEnv) {
	case "multi":
		plugin.Serve(plugin.ServeConfig{LimiterKinds: []plugin.LimiterKindEntry{primary, {Kind: renamed{}}}})
	case "invalid":
		plugin.Serve(plugin.ServeConfig{LimiterKinds: []plugin.LimiterKindEntry{primary, primary}})
	case "raw":
		goplugin.Serve(&goplugin.ServeConfig{
			HandshakeConfig: plugin.Handshake,
			Plugins:         goplugin.PluginSet{rawecho.Name: &rawecho.Plugin{}},
			GRPCServer:      goplugin.DefaultGRPCServer,
		})
	case "codecs":
		plugin.Serve(plugin.ServeConfig{Codecs: []plugin.CodecEntry{
			{Codec: testcodec.Deflate(), Bomb: testcodec.DeflateBomb},
			{Codec: testcodec.NewBlocking()},
			{Codec: testcodec.Unbounded()},
			{Codec: testcodec.Growing()},
			{Codec: testcodec.Panicking(), Bomb: testcodec.FailingBomb},
			{Codec: testcodec.Trailing(), Bomb: testcodec.DeflateBomb},
		}})
	case "policies":
		plugin.Serve(plugin.ServeConfig{EndpointPolicies: []plugin.EndpointPolicyEntry{policy}})
	default:
		plugin.Serve(plugin.ServeConfig{LimiterKinds: []plugin.LimiterKindEntry{primary}, EndpointPolicies: []plugin.EndpointPolicyEntry{policy}})
	}
}
