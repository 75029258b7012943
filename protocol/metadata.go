package protocol

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Fixed metadata rules (limits on count and size are in [Limits]).
const (
	// MaxMetadataKeyLen is the maximum length of a metadata key.
	MaxMetadataKeyLen = 128
)

// MetadataEntry is one key/value pair for [AppendMetadata].
type MetadataEntry struct {
	Key   string
	Value []byte
}

// Metadata is an ordered list of key/value entries carried in the metadata
// block of a Request, Response or Error frame. Keys may repeat
// (multi-valued); order is preserved.
//
// A Metadata filled by [ParseMetadata] (or by a frame decoder) is a view:
// its keys and values alias the parsed payload and are valid only as long
// as that payload is. Parsing reuses the Metadata's internal slice, so a
// reused Metadata parses without allocating once it has grown to the
// largest entry count seen.
//
// A Metadata built with [Metadata.Add] owns its bytes. Adding to a parsed
// Metadata first copies the parsed entries; the payload is never written.
//
// The zero value is an empty Metadata ready to use. A Metadata must not be
// copied and then modified through both copies.
type Metadata struct {
	data    []byte // encoded entries without the count prefix
	spans   []mdSpan
	own     []byte // storage for Add, reused across Reset
	aliased bool   // data aliases a parsed payload
}

type mdSpan struct {
	koff, klen, voff, vlen uint32 // offsets into data
}

// Len returns the number of entries.
func (m *Metadata) Len() int { return len(m.spans) }

// At returns the key and value of entry i (0 <= i < Len). Both alias the
// Metadata's storage (for a parsed Metadata, the frame payload); the
// caller must not modify them.
func (m *Metadata) At(i int) (key, value []byte) {
	s := m.spans[i]
	return m.data[s.koff : s.koff+s.klen : s.koff+s.klen], m.data[s.voff : s.voff+s.vlen : s.voff+s.vlen]
}

// Get returns the value of the first entry whose key equals key. The value
// aliases the Metadata's storage. It does not allocate.
func (m *Metadata) Get(key string) ([]byte, bool) {
	for i := range m.spans {
		k, v := m.At(i)
		if string(k) == key {
			return v, true
		}
	}
	return nil, false
}

// Reset removes all entries, keeping allocated storage for reuse.
func (m *Metadata) Reset() {
	m.spans = m.spans[:0]
	m.own = m.own[:0]
	m.data = m.own
	m.aliased = false
}

// Add appends an entry. The key must be 1..128 bytes of lower-case ASCII
// letters, digits, '-', '_' or '.'; the value may be any bytes and is
// copied. Add returns an error wrapping [ErrInvalidValue] for an invalid key.
func (m *Metadata) Add(key string, value []byte) error {
	if !validKey(key) {
		return invalid("metadata key %q", key)
	}
	if m.aliased {
		m.own = append(m.own[:0], m.data...)
		m.aliased = false
	}
	var s mdSpan
	m.own = binary.AppendUvarint(m.own, uint64(len(key)))
	s.koff, s.klen = uint32(len(m.own)), uint32(len(key))
	m.own = append(m.own, key...)
	m.own = binary.AppendUvarint(m.own, uint64(len(value)))
	s.voff, s.vlen = uint32(len(m.own)), uint32(len(value))
	m.own = append(m.own, value...)
	m.data = m.own
	m.spans = append(m.spans, s)
	return nil
}

// EncodedLen returns the size of the encoded metadata block, count
// included. This is the size checked against Limits.MaxMetadataBytes.
func (m *Metadata) EncodedLen() int {
	return uvarintLen(uint64(len(m.spans))) + len(m.data)
}

// appendBlock appends the encoded block: uvarint count, then the entries.
func (m *Metadata) appendBlock(dst []byte) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(m.spans)))
	return append(dst, m.data...)
}

// view resets m before parsing into it; own storage is kept.
func (m *Metadata) view() {
	m.spans = m.spans[:0]
	m.data = nil
	m.aliased = true
}

// AppendMetadata appends the encoded metadata block for entries (uvarint
// count, then for each entry the key and the value as length-prefixed
// bytes) to dst. It returns an error wrapping [ErrInvalidValue], and dst
// unchanged, if a key is invalid. It does not check the receiver's
// MaxMetadataEntries and MaxMetadataBytes limits.
func AppendMetadata(dst []byte, entries []MetadataEntry) ([]byte, error) {
	for _, e := range entries {
		if !validKey(e.Key) {
			return dst, invalid("metadata key %q", e.Key)
		}
	}
	dst = binary.AppendUvarint(dst, uint64(len(entries)))
	for _, e := range entries {
		dst = appendString(dst, e.Key)
		dst = appendBytes(dst, e.Value)
	}
	return dst, nil
}

// ParseMetadata decodes the metadata block at the front of b into m and
// returns the number of bytes it occupies; bytes after the block are left
// to the caller. It enforces the key syntax, lim.MaxMetadataEntries and
// lim.MaxMetadataBytes (the block's encoded size, count included). On
// success m's keys and values alias b. It does not allocate once m's
// internal slice has grown to the entry count.
//
// A malformed block (truncated, a bad varint, an invalid or over-long key)
// is a violation. A well-formed block that only exceeds
// lim.MaxMetadataEntries or lim.MaxMetadataBytes is not: ParseMetadata then
// returns a [*MetadataLimitError] with the block's size as n (the bytes
// after it can still be decoded) and leaves m empty.
func ParseMetadata(b []byte, lim Limits, m *Metadata) (int, error) {
	m.view()
	n, err := parseMetadata(b, lim, m)
	if err != nil {
		m.spans = m.spans[:0]
		if errLimit, ok := err.(*MetadataLimitError); ok {
			return errLimit.Bytes, err
		}
		return 0, err
	}
	return n, nil
}

// MetadataLimitError reports a metadata block that is well-formed but
// exceeds the receiver's MaxMetadataEntries or MaxMetadataBytes. It is not
// a [*ProtocolError]: the frame was read whole and the rest of it decoded,
// so the connection stays usable and only the call it belongs to fails (a
// server answers such a Request with Error InvalidArgument).
type MetadataLimitError struct {
	// Entries and Bytes are the block's entry count and encoded size
	// (count included).
	Entries, Bytes int
	// MaxEntries and MaxBytes are the receiver's limits.
	MaxEntries, MaxBytes uint32
}

func (e *MetadataLimitError) Error() string {
	if e.Entries > int(e.MaxEntries) {
		return fmt.Sprintf("sluice/protocol: metadata has %d entries, limit %d (MaxMetadataEntries)", e.Entries, e.MaxEntries)
	}
	return fmt.Sprintf("sluice/protocol: metadata block is %d bytes, limit %d (MaxMetadataBytes)", e.Bytes, e.MaxBytes)
}

func isMetadataLimit(err error) bool {
	_, ok := err.(*MetadataLimitError)
	return ok
}

func parseMetadata(b []byte, lim Limits, m *Metadata) (int, error) {
	c := cursor{b: b, what: "metadata"}
	count, err := c.uvarint("entry count")
	if err != nil {
		return 0, err
	}
	if count > uint64(lim.MaxMetadataEntries) {
		return 0, oversizeMetadata(b, lim)
	}
	start := len(b) - len(c.b)
	for i := uint64(0); i < count; i++ {
		key, err := c.bytes("key", MaxMetadataKeyLen)
		if err != nil {
			return 0, err
		}
		if !validKey(key) {
			return 0, violation("metadata: invalid key %q", key)
		}
		kend := len(b) - len(c.b)
		if l, k := binary.Uvarint(c.b); k > 0 && l > uint64(lim.MaxMetadataBytes) {
			return 0, oversizeMetadata(b, lim)
		}
		val, err := c.bytes("value", uint64(lim.MaxMetadataBytes))
		if err != nil {
			return 0, err
		}
		vend := len(b) - len(c.b)
		if vend > int(lim.MaxMetadataBytes) {
			return 0, oversizeMetadata(b, lim)
		}
		m.spans = append(m.spans, mdSpan{
			koff: uint32(kend - len(key) - start), klen: uint32(len(key)),
			voff: uint32(vend - len(val) - start), vlen: uint32(len(val)),
		})
	}
	n := len(b) - len(c.b)
	if n > int(lim.MaxMetadataBytes) {
		return 0, oversizeMetadata(b, lim)
	}
	m.data = b[start:n:n]
	return n, nil
}

// oversizeMetadata walks a block that exceeds lim without keeping
// anything: a violation if the block is malformed, else a
// *MetadataLimitError with its size. The walk is bounded by len(b) (every
// entry takes at least three bytes) and does not allocate on success.
func oversizeMetadata(b []byte, lim Limits) error {
	c := cursor{b: b, what: "metadata"}
	count, err := c.uvarint("entry count")
	if err != nil {
		return err
	}
	for i := uint64(0); i < count; i++ {
		key, err := c.bytes("key", MaxMetadataKeyLen)
		if err != nil {
			return err
		}
		if !validKey(key) {
			return violation("metadata: invalid key %q", key)
		}
		if _, err := c.bytes("value", math.MaxUint64); err != nil {
			return err
		}
	}
	return &MetadataLimitError{Entries: int(count), Bytes: len(b) - len(c.b), MaxEntries: lim.MaxMetadataEntries, MaxBytes: lim.MaxMetadataBytes}
}

func validKeyByte(c byte) bool {
	return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.'
}

func validKey[T string | []byte](k T) bool {
	if len(k) == 0 || len(k) > MaxMetadataKeyLen {
		return false
	}
	for i := 0; i < len(k); i++ {
		if !validKeyByte(k[i]) {
			return false
		}
	}
	return true
}
