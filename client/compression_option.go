package client

import (
	"github.com/sluicerpc/sluice/codecs"
	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/protocol/status"
)

// Compression sets the policy that decides whether this call's request is
// compressed, instead of Options.Compression's policy for its method
// (Methods, else Policy). As there, a zero field selects its default
// (codecs.DefaultPolicy) and a negative MinSize sends the request
// uncompressed. A policy out of range (codecs.Policy.Validate) fails the
// call with InvalidArgument before anything is sent.
//
// The policy only decides whether to compress: the codec is the one the
// connection negotiated (the first of Options.Compression.Codecs that the
// server accepts), and nothing is compressed when there is none. It does
// not change how the response is sent or decoded.
func Compression(p codecs.Policy) CallOption { return compressionOption{p} }

// NoCompression sends this call's request uncompressed, whatever the
// policies (the same as Compression(codecs.Policy{MinSize: -1})). The
// response may still come compressed, and is decoded as usual.
func NoCompression() CallOption { return compressionOption{codecs.Policy{MinSize: -1}} }

type compressionOption struct{ p codecs.Policy }

func (c compressionOption) apply(o callOptions) callOptions {
	o.compression, o.compressionSet = c.p, true
	return o
}

// preparePolicy sets the call's compression policy: the call option's,
// validated, or the configured one for method.
func (cl *call) preparePolicy(r *codecs.Resolved, method string, co *callOptions) error {
	if !co.compressionSet {
		cl.policy = r.Policy(method)
		return nil
	}
	if err := co.compression.Validate(); err != nil {
		return status.Errorf(protocol.CodeInvalidArgument, "the Compression call option: %v", err)
	}
	cl.policy = co.compression
	return nil
}
