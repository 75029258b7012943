package server

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/sluicerpc/sluice/protocol"
)

// Request and response metadata.
//
// The request metadata is parsed in place: its keys and values alias the
// call's pooled copy of the request payload, so reading it costs no copy
// and a call without metadata costs nothing at all. The view is valid only
// while the handler runs; Metadata enforces that (its methods panic once
// the call has ended). Values read through it are copies, which the
// handler may keep.

// responseMetadataLimits bound the response metadata a handler may set:
// the protocol's defaults, which every sluice client accepts (a client
// checks response metadata against its own limits, and the server does not
// know them).
var responseMetadataLimits = protocol.DefaultLimits()

// callMetadata is the metadata state of a pooled call.
type callMetadata struct {
	// seq changes when the call ends, so that a Metadata kept past its
	// handler is detected.
	seq atomic.Uint64
	// resp is the response metadata the handler set; owned, reused.
	resp protocol.Metadata
	// frame is the buffer of a Response frame with metadata.
	frame []byte
}

// reset ends the call's metadata: views taken during the call become
// invalid and the response metadata is emptied (its storage kept).
func (m *callMetadata) reset() {
	m.seq.Add(1)
	m.resp.Reset()
	if cap(m.frame) > maxPooledBuffer {
		m.frame = nil
	}
}

// Metadata is a read-only view of a call's request metadata: an ordered
// list of entries whose keys may repeat (lower-case ASCII letters, digits,
// '-', '_' and '.', 1..128 bytes). The zero value is empty.
//
// A Metadata is valid only while the handler of its call runs: using it
// afterwards panics. The strings its methods return are copies and remain
// valid.
type Metadata struct {
	cl  *call
	seq uint64
}

// RequestMetadata returns the request metadata of the call whose handler
// got ctx (or a context derived from it); it is empty outside a handler
// and for a request without metadata. It does not allocate.
func RequestMetadata(ctx context.Context) Metadata {
	cl, ok := ctx.Value(callKey{}).(*call)
	if !ok || cl == nil || cl.m == nil {
		return Metadata{}
	}
	return Metadata{cl: cl, seq: cl.md.seq.Load()}
}

func (m Metadata) view() *protocol.Metadata {
	if m.cl == nil {
		return nil
	}
	if m.cl.md.seq.Load() != m.seq {
		panic("server: request Metadata used after its handler returned (copy what you keep: Get, Values and At return copies)")
	}
	return &m.cl.req.Metadata
}

// Len returns the number of entries.
func (m Metadata) Len() int {
	if v := m.view(); v != nil {
		return v.Len()
	}
	return 0
}

// At returns entry i (0 <= i < Len).
func (m Metadata) At(i int) (key, value string) {
	v := m.view()
	if v == nil || i < 0 || i >= v.Len() {
		panic(fmt.Sprintf("server: Metadata.At(%d) out of range [0, %d)", i, m.Len()))
	}
	k, val := v.At(i)
	return string(k), string(val)
}

// Get returns the value of the first entry with key.
func (m Metadata) Get(key string) (string, bool) {
	if v := m.view(); v != nil {
		if b, ok := v.Get(key); ok {
			return string(b), true
		}
	}
	return "", false
}

// Values returns the values of every entry with key, in order; nil if
// there is none.
func (m Metadata) Values(key string) []string {
	v := m.view()
	if v == nil {
		return nil
	}
	var out []string
	for i := range v.Len() {
		if k, val := v.At(i); string(k) == key {
			out = append(out, string(val))
		}
	}
	return out
}

// ErrMetadata is wrapped by the errors of AddResponseMetadata.
var ErrMetadata = errors.New("server: response metadata refused")

// AddResponseMetadata appends an entry to the response metadata of the
// call whose handler got ctx. The metadata is sent with the call's answer:
// in the Response frame, or in the Error frame when the handler fails (it
// is discarded for a one-way call). Keys may repeat; a key is 1..128 bytes
// of lower-case ASCII letters, digits, '-', '_' and '.'.
//
// The response metadata is bounded by the protocol's default limits, which
// every client accepts: 64 entries and 8 KiB encoded. An invalid key, or
// an entry that would exceed a bound, is refused with an error wrapping
// ErrMetadata that names the bound, and the metadata set so far is kept.
// Call it from the handler's goroutine, before the handler returns.
func AddResponseMetadata(ctx context.Context, key, value string) error {
	cl, ok := ctx.Value(callKey{}).(*call)
	if !ok || cl == nil || cl.m == nil {
		return fmt.Errorf("%w: the context is not a handler's", ErrMetadata)
	}
	md := &cl.md.resp
	lim := responseMetadataLimits
	if !validMetadataKey(key) {
		return fmt.Errorf("%w: invalid key %q: keys are 1..%d bytes of a-z, 0-9, '-', '_' and '.'", ErrMetadata, key, protocol.MaxMetadataKeyLen)
	}
	if md.Len()+1 > int(lim.MaxMetadataEntries) {
		return fmt.Errorf("%w: %q would be entry %d; the limit is %d entries", ErrMetadata, key, md.Len()+1, lim.MaxMetadataEntries)
	}
	if n := md.EncodedLen() + entryLen(key, value); n > int(lim.MaxMetadataBytes) {
		return fmt.Errorf("%w: %q (a %d-byte value) would make the metadata %d bytes; the limit is %d bytes", ErrMetadata, key, len(value), n, lim.MaxMetadataBytes)
	}
	return md.Add(key, []byte(value))
}

// entryLen is the encoded size of one entry. (The block's count prefix
// stays one byte: the entry bound is below 128.)
func entryLen(key, value string) int {
	return uvarintLen(len(key)) + len(key) + uvarintLen(len(value)) + len(value)
}

func uvarintLen(n int) int {
	l := 1
	for n >= 0x80 {
		n >>= 7
		l++
	}
	return l
}

func validMetadataKey(k string) bool {
	if len(k) == 0 || len(k) > protocol.MaxMetadataKeyLen {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// refuseMetadata answers a request whose metadata block is well-formed
// but over this server's limits (err is a *protocol.MetadataLimitError)
// with InvalidArgument, and reports true; any other error is left to the
// caller (a violation ends the connection).
func (c *conn) refuseMetadata(h protocol.Header, req *protocol.Request, err error) bool {
	var le *protocol.MetadataLimitError
	if !errors.As(err, &le) {
		return false
	}
	c.lastID.Store(h.ID)
	var msg string
	if le.Entries > int(le.MaxEntries) {
		msg = fmt.Sprintf("request metadata refused: %d entries, the server's limit is %d", le.Entries, le.MaxEntries)
	} else {
		msg = fmt.Sprintf("request metadata refused: %d bytes encoded, the server's limit is %d", le.Bytes, le.MaxBytes)
	}
	c.refuse(h.ID, req.OneWay, protocol.ErrorFrame{Code: protocol.CodeInvalidArgument, Message: msg}, dropMetadata)
	return true
}

// withResponseMetadata adds the handler's response metadata to an Error
// frame, unless the frame would then exceed the client's maximum frame
// size.
func (cl *call) withResponseMetadata(f *protocol.ErrorFrame) {
	if cl.md.resp.Len() == 0 {
		return
	}
	if uint64(len(f.Message)+len(f.Reason)+cl.md.resp.EncodedLen()+32) > uint64(cl.c.peerMax) {
		return
	}
	f.Metadata = cl.md.resp
}
