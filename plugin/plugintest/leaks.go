// Package plugintest helps the tests of programs that load plugins.
package plugintest

import "go.uber.org/goleak"

// IgnoreLeaks are the goleak options for the goroutines that grpc and
// go-plugin stop asynchronously after a plugin connection is closed (a
// connection's callback serializer and transport reset, the stderr copier
// of a killed plugin). goleak retries for a while before it reports;
// these may still be there when it gives up on a loaded machine.
func IgnoreLeaks() []goleak.Option {
	return []goleak.Option{
		goleak.IgnoreTopFunction("google.golang.org/grpc/internal/grpcsync.(*CallbackSerializer).run"),
		goleak.IgnoreTopFunction("google.golang.org/grpc.(*addrConn).resetTransportAndUnlock"),
		goleak.IgnoreAnyFunction("github.com/hashicorp/go-plugin.(*Client).logStderr"),
	}
}
