package main

import (
	"fmt"
	"strings"

	"github.com/sluicerpc/sluice/codecs"
	"github.com/sluicerpc/sluice/spi"
)

// defaultCodecList is -codecs' default: codecs.Builtin() in its order.
func defaultCodecList() string {
	var names []string
	for _, c := range codecs.Builtin() {
		names = append(names, c.Name())
	}
	return strings.Join(names, ",")
}

// parseCodecList parses -codecs: built-in profile names, comma-separated,
// in preference order, or "none". It names every problem.
func parseCodecList(flag, s string) (list []spi.Codec, off bool, err error) {
	s = strings.TrimSpace(s)
	if s == "none" {
		return nil, true, nil
	}
	if s == "" {
		return nil, false, fmt.Errorf("%s must name at least one codec, or be none", flag)
	}
	seen := map[string]bool{}
	var bad []string
	for _, f := range strings.Split(s, ",") {
		name := strings.TrimSpace(f)
		c, ok := codecs.ByName(name)
		switch {
		case !ok:
			bad = append(bad, fmt.Sprintf("unknown codec %q", name))
		case name == "identity":
			bad = append(bad, "identity needs no profile (uncompressed bodies are always understood)")
		case seen[name]:
			bad = append(bad, fmt.Sprintf("%q listed twice", name))
		default:
			list = append(list, c)
		}
		seen[name] = true
	}
	if len(bad) > 0 {
		return nil, false, fmt.Errorf("%s: %s (known: zstd, s2, gzip, br, or none)", flag, strings.Join(bad, "; "))
	}
	return list, false, nil
}

// compressionFlags are the compression flags "sluice serve" and "sluice
// call" share.
type compressionFlags struct {
	Codecs         string
	MinSize        int
	MaxDecodedSize int64
	DecodeRatio    int
	DecodeFloor    int64
	codecs         []spi.Codec
	off            bool
}

// define adds the flags to fs; side names who compresses ("responses" or
// "requests").
func (o *compressionFlags) define(fs flagSet, side string) {
	fs.StringVar(&o.Codecs, "codecs", defaultCodecList(), "codec profiles, comma-separated in preference order (zstd, s2, gzip, br), or none")
	fs.IntVar(&o.MinSize, "compress-min-size", codecs.DefaultMinSize, "compress "+side+" of at least this many bytes (when that saves 64 bytes and 5%); -1 never compresses them")
	fs.Int64Var(&o.MaxDecodedSize, "max-decoded-size", codecs.DefaultMaxDecodedSize, "largest decoded body accepted, in bytes (1 to 4294967295); a body declaring more is refused before any decode")
	fs.IntVar(&o.DecodeRatio, "decode-ratio", codecs.DefaultDecodeRatio, "a body may decode to at most max(-decode-floor, compressed bytes x this); 0 turns the ratio bound off")
	fs.Int64Var(&o.DecodeFloor, "decode-floor", codecs.DefaultDecodeFloor, "the decoded size every body may reach whatever its ratio, in bytes; positive")
}

// validate checks the flags, naming each problem.
func (o compressionFlags) validate() []error {
	var errs []error
	if _, _, err := parseCodecList("-codecs", o.Codecs); err != nil {
		errs = append(errs, err)
	}
	if o.MinSize < -1 {
		errs = append(errs, fmt.Errorf("-compress-min-size must be -1 (never) or at least 0, got %d", o.MinSize))
	}
	if err := inRange("-max-decoded-size", o.MaxDecodedSize, 1, 1<<32-1, ""); err != nil {
		errs = append(errs, err)
	}
	if o.DecodeRatio < 0 {
		errs = append(errs, fmt.Errorf("-decode-ratio must not be negative (0: no ratio bound), got %d", o.DecodeRatio))
	}
	if err := inRange("-decode-floor", o.DecodeFloor, 1, 1<<32-1, ""); err != nil {
		errs = append(errs, err)
	}
	return errs
}

// config maps the validated flags onto codecs.Config.
func (o compressionFlags) config() codecs.Config {
	list, off, _ := parseCodecList("-codecs", o.Codecs) // validated
	c := codecs.Config{Codecs: list, Off: off, MaxDecodedSize: int(o.MaxDecodedSize), DecodeRatio: o.DecodeRatio, DecodeFloor: int(o.DecodeFloor)}
	switch {
	case o.MinSize < 0:
		c.Policy.MinSize = -1
	case o.MinSize == 0:
		c.Policy.MinSize = 1 // every body (the Policy's 0 is its default)
	default:
		c.Policy.MinSize = o.MinSize
	}
	if o.DecodeRatio == 0 {
		c.DecodeRatio = -1
	}
	return c
}

// flagSet is the part of *flag.FlagSet the flag definitions use.
type flagSet interface {
	StringVar(p *string, name, value, usage string)
	IntVar(p *int, name string, value int, usage string)
	Int64Var(p *int64, name string, value int64, usage string)
}
