package client

import (
	"errors"
	"fmt"

	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/protocol/status"
)

// WithMetadata adds request metadata to the call: pairs alternate keys and
// values ("tenant", "acme", "trace-id", "4bf9..."). Keys may repeat; order
// is kept; several WithMetadata options add up. A key is 1..128 bytes of
// lower-case ASCII letters, digits, '-', '_' and '.'.
//
// The metadata is checked before anything is sent; the call fails with
// InvalidArgument, naming the bound, for an odd number of arguments, an
// invalid key, more than 64 entries (the protocol's default
// MaxMetadataEntries; a server configured lower refuses the call with
// InvalidArgument), or an encoded block larger than the server announced
// in its handshake (8 KiB by default).
func WithMetadata(pairs ...string) CallOption { return metadataOption(pairs) }

type metadataOption []string

func (p metadataOption) apply(o callOptions) callOptions {
	o.md = append(o.md[:len(o.md):len(o.md)], p...)
	return o
}

// ResponseMetadata makes the call store the metadata of its answer in md
// (which it resets first): the metadata of the Response, or of the Error
// frame when the handler failed. md is written only while the call runs
// and is the caller's once it returns; its entries are copies. It stays
// empty for a one-way call and when no answer arrived.
func ResponseMetadata(md *protocol.Metadata) CallOption { return responseMetadataOption{md} }

type responseMetadataOption struct{ md *protocol.Metadata }

func (r responseMetadataOption) apply(o callOptions) callOptions { o.respMD = r.md; return o }

// requestMetadataEntries is the entry bound the client checks: the
// protocol's default, which a server does not announce.
var requestMetadataEntries = int(protocol.DefaultLimits().MaxMetadataEntries)

// callMetadata is the metadata state of a pooled call.
type callMetadata struct {
	send protocol.Metadata  // the request metadata, built once per call
	recv *protocol.Metadata // where the caller wants the answer's metadata
}

func (m *callMetadata) reset() {
	m.send.Reset()
	m.recv = nil
}

// prepare builds the request metadata from the call's options. It costs
// nothing for a call without metadata.
func (m *callMetadata) prepare(co *callOptions) error {
	m.recv = co.respMD
	if m.recv != nil {
		m.recv.Reset()
	}
	if len(co.md) == 0 {
		return nil
	}
	if len(co.md)%2 != 0 {
		return status.Errorf(protocol.CodeInvalidArgument, "request metadata: WithMetadata needs pairs of key and value, got %d strings", len(co.md))
	}
	if n := len(co.md) / 2; n > requestMetadataEntries {
		return status.Errorf(protocol.CodeInvalidArgument, "request metadata: %d entries, the limit is %d (MaxMetadataEntries)", n, requestMetadataEntries)
	}
	for i := 0; i < len(co.md); i += 2 {
		key, value := co.md[i], co.md[i+1]
		if len(key) > protocol.MaxMetadataKeyLen {
			return status.Errorf(protocol.CodeInvalidArgument, "request metadata: key %.32q... is %d bytes, the limit is %d", key, len(key), protocol.MaxMetadataKeyLen)
		}
		if err := m.send.Add(key, []byte(value)); err != nil {
			return status.Errorf(protocol.CodeInvalidArgument, "request metadata: invalid key %q: keys are 1..%d bytes of a-z, 0-9, '-', '_' and '.'", key, protocol.MaxMetadataKeyLen)
		}
	}
	return nil
}

// attach puts the request metadata on req for an attempt on cn, after
// checking it against the server's announced bound, and resets the
// caller's response metadata. It costs nothing for a call without
// metadata.
func (m *callMetadata) attach(cn *conn, req *protocol.Request) error {
	if m.recv != nil {
		m.recv.Reset()
	}
	if m.send.Len() == 0 {
		return nil
	}
	if n := m.send.EncodedLen(); n > int(cn.peerMaxMetadata) {
		big, size := "", -1
		for i := range m.send.Len() {
			if k, v := m.send.At(i); len(v) > size {
				big, size = string(k), len(v)
			}
		}
		return status.Errorf(protocol.CodeInvalidArgument, "request metadata: %d bytes encoded (the largest value, of %q, is %d bytes), the server's limit is %d bytes (MaxMetadataBytes)", n, big, size, cn.peerMaxMetadata)
	}
	req.Metadata = m.send
	return nil
}

// capture copies an answer's metadata for the caller, if it asked.
func (m *callMetadata) capture(md *protocol.Metadata) {
	if m.recv == nil {
		return
	}
	m.recv.Reset()
	for i := range md.Len() {
		k, v := md.At(i)
		_ = m.recv.Add(string(k), v) // the key was validated by the parser
	}
}

// metadataLimit reports whether err is a well-formed metadata block over
// this client's limits (the call fails, the connection stays).
func metadataLimit(err error) bool {
	var le *protocol.MetadataLimitError
	return errors.As(err, &le)
}

// responseMetadataRefused is the error of a call whose Response carried
// metadata over this client's limits.
func responseMetadataRefused(err error) error {
	var le *protocol.MetadataLimitError
	errors.As(err, &le)
	if le.Entries > int(le.MaxEntries) {
		return status.Errorf(protocol.CodeResourceExhausted, "response metadata refused: %d entries, this client's limit is %d", le.Entries, le.MaxEntries)
	}
	return status.New(protocol.CodeResourceExhausted, fmt.Sprintf("response metadata refused: %d bytes encoded, this client's limit is %d", le.Bytes, le.MaxBytes))
}
