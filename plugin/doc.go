// Package plugin serves sluice SPI implementations from separate binaries
// with hashicorp/go-plugin, and loads them in the host as the same SPI.
//
// A plugin binary's main calls ServeLimiterKind with its spi.LimiterKind; it
// must write nothing to stdout (go-plugin's handshake travels there) and logs
// to stderr, e.g. with NewPluginLogger. The host calls LoadLimiterKind with
// the binary's path, registers the result with Register so configuration
// can name the kind, and calls Close to kill the plugin. A plugin exits by
// itself when its host dies; processes a plugin starts itself are its own
// business (Kill does not reach grandchildren).
//
// The bridge speaks gRPC with the versioned Handshake. Every limiter a host
// creates lives in the plugin, addressed by an id; every call carries the
// host's now as Unix nanoseconds, so the plugin's limiter sees exactly the
// host's instants, and decisions (hint and RetryAt) come back exactly.
// *spi.ParamError values cross as *spi.ParamError; other errors of the
// implementation as *RemoteError; a panic of the implementation is
// re-raised in the host's caller.
//
// When the plugin cannot be reached (crashed, killed, closed, timed out)
// Validate, New and Reconfigure return an error wrapping
// ErrPluginUnavailable (and ErrPluginExited once the process is known to be
// gone). TryAcquire cannot return an error: it refuses with
// spi.RefuseNever(); Release and Cancel do nothing, and Snapshot returns a
// snapshot with only Kind set. Those failures are counted
// (LimiterKindClient.Failures), remembered (LimiterKindClient.Err,
// Limiter.Err) and logged, and the host keeps running.
//
// A call crosses the process boundary and costs tens to hundreds of
// microseconds, so plug-in kinds suit remote or coarse-grained limits; the
// in-process module path stays the fast path.
package plugin
