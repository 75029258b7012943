// Package plugin serves sluice SPI implementations from separate binaries
// with hashicorp/go-plugin, and loads them in the host as the same SPI.
//
// A plugin binary's main calls Serve with the limiter kinds it serves, each
// optionally with its conformance capabilities (so that "sluice conformance
// --plugin" can test the binary), or ServeLimiterKind for one kind.
// ServeConfig.EndpointPolicies serves endpoint policies as well (or alone):
// the host lists them with Plugin.EndpointPolicies and creates an instance
// in the plugin with Plugin.NewEndpointPolicy, an *EndpointPolicyClient
// that implements spi.EndpointPolicy and io.Closer (Close drops the
// instance). ServeConfig.Codecs serves codecs (spi.Codec), each with an
// optional bomb builder for the conformance suite: the host gets them with
// Plugin.Codec or OpenCodec as a *CodecClient, an spi.Codec whose every
// call crosses the boundary with its body, plus Bomb. A plugin binary must
// write nothing to stdout (go-plugin's handshake travels there) and logs to
// stderr, e.g. with NewPluginLogger. The host calls Open with the binary's
// path and gets a *Plugin whose LimiterKinds it registers (Plugin.Register)
// so configuration can name them, or LoadLimiterKind for the one kind it
// wants; Close kills the plugin. A plugin exits by itself when its host
// dies; processes a plugin starts itself are its own business (Kill does
// not reach grandchildren).
//
// The bridge speaks gRPC with the versioned Handshake (ProtocolVersion 2).
// Every limiter a host creates lives in the plugin, addressed by an id;
// every call carries the host's now as Unix nanoseconds, so the plugin's
// limiter sees exactly the host's instants, and decisions (hint and RetryAt)
// come back exactly. *spi.ParamError values cross as *spi.ParamError; other
// errors of the implementation as *RemoteError; a panic of the
// implementation is re-raised in the host's caller. The bridge is built to
// grow: each SPI is its own go-plugin plugin name and gRPC service over the
// same connection, and ServeConfig gets a field per SPI: endpoint policies
// are the EndpointPolicy service under the go-plugin name
// "sluice.endpoint_policies". Adding that service left the limiter wire
// unchanged, so ProtocolVersion stays 2: a host sees a binary built before
// it as serving no policy. Endpoint policy tokens, decisions (RetryAfter to
// the nanosecond) and outcomes cross unchanged, and so does time: every
// call carries the host's clock reading, which the policy's clock in the
// plugin returns (WithPolicyClock).
//
// When the plugin cannot be reached (crashed, killed, closed, or it left a
// call unanswered for the call timeout) Validate, New and Reconfigure
// return an error wrapping ErrPluginUnavailable (and ErrPluginExited once
// the process is known to be gone). TryAcquire cannot return an error: it
// refuses with spi.RefuseNever(); Release and Cancel do nothing, and
// Snapshot returns a snapshot with only Kind set. Those failures are
// counted (Plugin.Failures), remembered (Plugin.Err, Limiter.Err) and
// logged, and the host keeps running. An endpoint policy's TryAcquire then
// refuses and its Report does nothing, counted and remembered the same way
// (EndpointPolicyClient.Err). A panic of a policy's TryAcquire is re-raised
// in the host; a panic of its Report is recovered and logged in the plugin,
// since Report must not panic.
//
// Codecs keep their contract across the boundary: Compress gives the
// plugin the room left in dst as its bound and never grows dst;
// Decompress gives it the limit, and the host reads no more than the limit
// of answer. A codec's errors cross as *RemoteError whose Cause keeps
// spi.ErrDecodedTooLarge, spi.ErrCorrupt and the context errors
// recognizable by errors.Is. The host's ctx crosses as the call's deadline
// and cancellation, so a cancelled call stops the decode in the plugin.
// The codec service was added within ProtocolVersion 2, like the policy
// service.
//
// Exactly once across the boundary: a grant the plugin makes after the
// host gave up on the call (timeout, Close) is rolled back in the plugin
// with Cancel, because nobody would release it; an endpoint attempt the
// plugin allows after the host gave up is reported there as cancelled. The one case the bridge
// cannot tell apart is a host giving up while the grant is already on its
// way back, within the same few microseconds; that grant stays held in the
// plugin until the limiter is dropped. A call that crashes the plugin loses
// the plugin's state entirely, which a new process starts afresh.
//
// A call crosses the process boundary and costs tens to hundreds of
// microseconds (BenchmarkPluginBridge: the bridge costs what a raw go-plugin
// round trip of the same size costs), so plug-in kinds suit remote or
// coarse-grained limits; the in-process module path stays the fast path.
package plugin
