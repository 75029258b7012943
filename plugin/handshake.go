package plugin

import (
	goplugin "github.com/hashicorp/go-plugin"
)

// ProtocolVersion is the version of the bridge protocol. A host refuses a
// plugin built for another version. Version 2 serves several limiter kinds
// per binary and their declared conformance capabilities. The endpoint
// policy service was added within version 2: it is a new gRPC service on
// the same connection and changes nothing of the limiter service, so a
// host reads a binary built before it as serving no policy (its Policies
// call is Unimplemented), and a host built before it ignores a binary's
// policies (it refuses a binary that serves only policies: no limiter
// kind). The codec service was added within version 2 the same way: a
// host reads an older binary as serving no codec.
const ProtocolVersion = 2

// Handshake is the go-plugin handshake shared by hosts and plugin binaries.
// The magic cookie only tells a plugin binary that it was started by a
// sluice host; it is not a security measure.
var Handshake = goplugin.HandshakeConfig{
	ProtocolVersion:  ProtocolVersion,
	MagicCookieKey:   "SLUICE_PLUGIN_MAGIC_COOKIE",
	MagicCookieValue: "sluice-limiter-kind-4b1f0c2e9a7d",
}

// limiterKindsPluginName is the go-plugin name under which a binary serves
// its limiter kinds, and which a host dispenses. Other SPIs get names of
// their own.
const limiterKindsPluginName = "sluice.limiter_kinds"

// endpointPoliciesPluginName is the go-plugin name under which a binary
// serves its endpoint policies (the EndpointPolicy gRPC service).
const endpointPoliciesPluginName = "sluice.endpoint_policies"

// codecsPluginName is the go-plugin name under which a binary serves its
// codecs (the Codec gRPC service).
const codecsPluginName = "sluice.codecs"

// hostPIDEnv carries the host's pid to the plugin so the plugin can notice
// that its host died (go-plugin plugins otherwise outlive a crashed host).
const hostPIDEnv = "SLUICE_PLUGIN_HOST_PID"
