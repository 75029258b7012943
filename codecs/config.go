package codecs

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/sluicerpc/sluice/spi"
)

// Config is one side's compression configuration, the same shape for the
// server (server.Options.Compression) and the client
// (client.Options.Compression): which codec profiles it offers (client)
// or accepts (server), when it compresses what it sends, and how far it
// lets what it receives inflate. The zero value offers or accepts
// Builtin(), compresses per DefaultPolicy, and decodes bodies of at most
// DefaultMaxDecodedSize bytes under the default expansion-ratio bound.
type Config struct {
	// Codecs are the profiles, in preference order: a client offers
	// them in its handshake in this order, a server accepts these and
	// answers with the first profile of the client's list that it
	// accepts. Nil selects Builtin(). Names must be valid
	// (spi.ValidCodecName), distinct and not "identity" (an uncompressed
	// body needs no profile); at most 16 (protocol.MaxCodecs).
	Codecs []spi.Codec

	// Off disables compression: nothing is offered or accepted, every
	// body is sent as it is, and a compressed body received is refused.
	Off bool

	// Policy decides which bodies this side compresses (zero fields
	// select the defaults of DefaultPolicy; a negative MinSize sends
	// everything uncompressed while still decoding what arrives).
	Policy Policy

	// Methods overrides Policy per method, by full name
	// ("service/method"). The client's per-call option overrides both.
	Methods map[string]Policy

	// MaxDecodedSize bounds one decoded body, whatever its declared
	// length (default DefaultMaxDecodedSize; at most 4 GiB - 1, the
	// wire's bound). A body declaring more is refused before any decode.
	MaxDecodedSize int

	// DecodeRatio and DecodeFloor are the expansion-ratio bound
	// (spi.DecodeLimit): a body may decode to at most
	// max(DecodeFloor, compressed bytes x DecodeRatio), so that a tiny
	// frame cannot inflate to MaxDecodedSize. Defaults 128 and 1 MiB; a
	// negative DecodeRatio disables the bound.
	DecodeRatio int
	DecodeFloor int
}

// Defaults of Config.
const (
	DefaultMaxDecodedSize = 64 << 20
	DefaultDecodeRatio    = 128
	DefaultDecodeFloor    = 1 << 20
	// maxWireDecoded is the largest original length the wire carries
	// (a uint32).
	maxWireDecoded = 1<<32 - 1
	maxProfiles    = 16
)

// Resolved is a validated Config with its defaults filled in. It is
// immutable and safe for concurrent use.
type Resolved struct {
	codecs  []spi.Codec
	names   []string
	policy  Policy
	methods map[string]Policy
	maxDec  int
	ratio   int
	floor   int
}

// Resolve validates c and fills its defaults. Every problem is reported,
// each naming its field.
func (c Config) Resolve() (*Resolved, error) {
	var errs []error
	r := &Resolved{policy: c.Policy, maxDec: c.MaxDecodedSize, ratio: c.DecodeRatio, floor: c.DecodeFloor}
	if !c.Off {
		list := c.Codecs
		if list == nil {
			list = Builtin()
		}
		if len(list) > maxProfiles {
			errs = append(errs, fmt.Errorf("codecs: Config.Codecs lists %d profiles, at most %d", len(list), maxProfiles))
		}
		seen := map[string]bool{}
		for i, cd := range list {
			if cd == nil {
				errs = append(errs, fmt.Errorf("codecs: Config.Codecs[%d] is nil", i))
				continue
			}
			name := cd.Name()
			switch {
			case !spi.ValidCodecName(name):
				errs = append(errs, fmt.Errorf("codecs: Config.Codecs[%d]: invalid profile name %q", i, name))
			case name == "identity":
				errs = append(errs, fmt.Errorf("codecs: Config.Codecs[%d]: identity needs no profile (an uncompressed body is sent as it is)", i))
			case seen[name]:
				errs = append(errs, fmt.Errorf("codecs: Config.Codecs[%d]: profile %q listed twice", i, name))
			}
			seen[name] = true
			r.codecs = append(r.codecs, cd)
			r.names = append(r.names, name)
		}
	}
	if err := c.Policy.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("codecs: Config.Policy: %w", err))
	}
	r.policy = c.Policy.resolved()
	if len(c.Methods) > 0 {
		r.methods = make(map[string]Policy, len(c.Methods))
		for _, name := range slices.Sorted(maps.Keys(c.Methods)) {
			p := c.Methods[name]
			if err := p.Validate(); err != nil {
				errs = append(errs, fmt.Errorf("codecs: Config.Methods[%q]: %w", name, err))
			}
			r.methods[name] = p.resolved()
		}
	}
	switch {
	case c.MaxDecodedSize == 0:
		r.maxDec = DefaultMaxDecodedSize
	case c.MaxDecodedSize < 0 || uint64(c.MaxDecodedSize) > maxWireDecoded:
		errs = append(errs, fmt.Errorf("codecs: Config.MaxDecodedSize must be in [1, %d], got %d", uint64(maxWireDecoded), c.MaxDecodedSize))
	}
	if r.ratio == 0 {
		r.ratio = DefaultDecodeRatio
	}
	switch {
	case c.DecodeFloor == 0:
		r.floor = DefaultDecodeFloor
	case c.DecodeFloor < 0:
		errs = append(errs, fmt.Errorf("codecs: Config.DecodeFloor must not be negative, got %d", c.DecodeFloor))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return r, nil
}

// Names are the profile names in preference order (empty when Off).
func (r *Resolved) Names() []string { return slices.Clone(r.names) }

// Codecs are the codecs in preference order.
func (r *Resolved) Codecs() []spi.Codec { return slices.Clone(r.codecs) }

// Lookup returns the codec named name and its 0-based position.
func (r *Resolved) Lookup(name string) (spi.Codec, int, bool) {
	for i, n := range r.names {
		if n == name {
			return r.codecs[i], i, true
		}
	}
	return nil, -1, false
}

// Policy is the policy for method (a full name; "" for none): its
// override when there is one, else the side's policy.
func (r *Resolved) Policy(method string) Policy {
	if p, ok := r.methods[method]; ok {
		return p
	}
	return r.policy
}

// MaxDecodedSize is the bound on one decoded body.
func (r *Resolved) MaxDecodedSize() int { return r.maxDec }

// DecodeLimit is the most a body of compressed bytes may decode to: the
// smaller of MaxDecodedSize and the expansion-ratio bound.
func (r *Resolved) DecodeLimit(compressed int) int {
	return spi.DecodeLimit(r.maxDec, r.floor, r.ratio, compressed)
}

// CheckDeclared reports whether a body of compressed bytes declaring
// declared decoded bytes may be decoded, before any decode: nil, or an
// error that says which bound the declaration passes.
func (r *Resolved) CheckDeclared(declared uint64, compressed int) error {
	if declared > uint64(r.maxDec) {
		return fmt.Errorf("declared decoded length %d exceeds the maximum decoded size %d", declared, r.maxDec)
	}
	if lim := r.DecodeLimit(compressed); declared > uint64(lim) {
		return fmt.Errorf("declared decoded length %d exceeds %d, the expansion bound for %d compressed bytes (ratio %d, floor %d)", declared, lim, compressed, r.ratio, r.floor)
	}
	return nil
}
