package protocol

import "errors"

// Limits bounds what a receiver accepts. Every Parse function and the
// [Reader] enforce the limits they are given; exceeding one is a violation.
// A Limits value is used as given: zero fields are not replaced by
// defaults, so start from [DefaultLimits].
type Limits struct {
	// MaxFrameSize bounds the payload length of a frame (header excluded).
	// It is at least MinFrameSize. Until the handshake completes, a
	// receiver uses its own default; afterwards the value it announced.
	MaxFrameSize uint32
	// MaxMetadataBytes bounds the encoded size of one metadata block,
	// including its entry count.
	MaxMetadataBytes uint32
	// MaxMetadataEntries bounds the number of entries in one metadata block.
	MaxMetadataEntries uint32
	// MaxAuthBytes bounds the auth payload of a Handshake.
	MaxAuthBytes uint32
	// MaxDecodedSize bounds the announced original length of a compressed
	// body.
	MaxDecodedSize uint32
}

// DefaultLimits returns the default limits: MaxFrameSize 4 MiB,
// MaxMetadataBytes 8 KiB, MaxMetadataEntries 64, MaxAuthBytes 16 KiB,
// MaxDecodedSize 64 MiB.
func DefaultLimits() Limits {
	return Limits{
		MaxFrameSize:       4 << 20,
		MaxMetadataBytes:   8 << 10,
		MaxMetadataEntries: 64,
		MaxAuthBytes:       16 << 10,
		MaxDecodedSize:     64 << 20,
	}
}

// Validate reports whether l is usable: MaxFrameSize must be at least
// MinFrameSize and every other field non-zero.
func (l Limits) Validate() error {
	var errs []error
	if l.MaxFrameSize < MinFrameSize {
		errs = append(errs, errors.New("sluice/protocol: Limits.MaxFrameSize below 4096"))
	}
	if l.MaxMetadataBytes == 0 {
		errs = append(errs, errors.New("sluice/protocol: Limits.MaxMetadataBytes is zero"))
	}
	if l.MaxMetadataEntries == 0 {
		errs = append(errs, errors.New("sluice/protocol: Limits.MaxMetadataEntries is zero"))
	}
	if l.MaxAuthBytes == 0 {
		errs = append(errs, errors.New("sluice/protocol: Limits.MaxAuthBytes is zero"))
	}
	if l.MaxDecodedSize == 0 {
		errs = append(errs, errors.New("sluice/protocol: Limits.MaxDecodedSize is zero"))
	}
	return errors.Join(errs...)
}
