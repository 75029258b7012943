package server

import (
	"context"
	"crypto/tls"
	"net"
)

// Authenticator turns a connection's handshake into an identity. It runs
// once per connection, inside the handshake timeout, before any call.
//
// The identity is visible to partition selectors (kernel.PartitionFacts)
// and to handlers (Peer). Returning an error refuses the connection: a
// *status.Error chooses the code sent to the client (Unauthenticated or
// PermissionDenied); any other error is sent as Unauthenticated with the
// error's text.
type Authenticator interface {
	Authenticate(ctx context.Context, info AuthInfo) (identity string, err error)
}

// AuthInfo is what an Authenticator sees of a connection.
type AuthInfo struct {
	// Payload is the Handshake frame's authentication payload (a token,
	// for instance). It is valid only during the call.
	Payload []byte
	// TLS is the connection's TLS state, nil without TLS; with client
	// certificates, TLS.PeerCertificates holds the verified chain.
	TLS        *tls.ConnectionState
	RemoteAddr net.Addr
}

// AuthenticatorFunc adapts a function to Authenticator.
type AuthenticatorFunc func(ctx context.Context, info AuthInfo) (string, error)

// Authenticate calls f.
func (f AuthenticatorFunc) Authenticate(ctx context.Context, info AuthInfo) (string, error) {
	return f(ctx, info)
}
