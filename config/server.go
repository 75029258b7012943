package config

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/sluicerpc/sluice/codecs"
	"github.com/sluicerpc/sluice/kernel"
	"github.com/sluicerpc/sluice/kernel/governor"
	"github.com/sluicerpc/sluice/limiters/concurrency"
	"github.com/sluicerpc/sluice/limiters/tokenbucket"
	"github.com/sluicerpc/sluice/limiters/window"
	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/server"
	"github.com/sluicerpc/sluice/spi"
)

// Selectors are the partition selectors a program offers to its
// documents, by the name server.admission.partition.selector gives. The
// kernel.Selector keeps its own Name and Version (its identity in the
// kernel); the document's name only looks it up.
type Selectors map[string]kernel.Selector

// ServerSettings are a document's server section converted to the values
// the server takes. Zero fields select the server's defaults, as zero
// Options fields do.
type ServerSettings struct {
	// Admission is the admission program; nil when the document has no
	// server.admission (admission disabled).
	Admission *kernel.Options
	// Calls is server.Options.Calls (SetCallCapacity).
	Calls server.CallCapacity
	// Connections is server.Options.Connections (SetConnectionLimits).
	Connections server.ConnectionLimits
	// Governor is server.Options.Governor (SetGovernorLimits).
	Governor governor.Limits
	// Compression is server.Options.Compression.
	Compression codecs.Config
	// StreamWindow is server.Options.StreamWindow.
	StreamWindow int
}

// ServerSettings converts the server section, checking every value that
// can be checked without a running server: limit parameters (as the
// limiter kinds check them), at most one concurrency and one rate limit
// per rule, at least one limit, the queue policy, the partition (its
// selector must be in sel), call capacity, connection limits, compression
// and the stream window. Problems are reported together in an *Error with
// the document's field paths and lines. Names of services and methods are
// checked by the kernel against its catalog when the program is enabled.
func (doc *Document) ServerSettings(sel Selectors) (ServerSettings, error) {
	ps := &problems{pos: doc.pos}
	var out ServerSettings
	s := doc.Server
	if s == nil {
		s = &Server{}
	}
	if s.Admission != nil {
		out.Admission = admission(ps, s.Admission, sel)
	}
	if c := s.Calls; c != nil {
		out.Calls = server.CallCapacity{PerConnection: c.PerConnection, PerServer: c.PerServer}
		atMost(ps, "server.calls.per_connection", int64(c.PerConnection), governor.MaxCallCapacity)
		atMost(ps, "server.calls.per_server", int64(c.PerServer), governor.MaxCallCapacity)
	}
	if c := s.Connections; c != nil {
		out.Connections = server.ConnectionLimits{MaxConnections: c.MaxConnections, MaxHandshakes: c.MaxHandshakes, MaxHandshakesPerAddress: c.MaxHandshakesPerAddress}
		connections(ps, c)
	}
	if g := s.Governor; g != nil {
		out.Governor = governor.Limits{Decodes: int64(g.Decodes), RetainedBytes: int64(g.RetainedBytes), DecodedBytes: int64(g.DecodedBytes), StreamBytes: int64(g.StreamBytes)}
	}
	if c := s.Compression; c != nil {
		out.Compression = compression(ps, c)
	}
	if st := s.Streams; st != nil && st.Window != 0 {
		if st.Window < protocol.InitialStreamWindow || st.Window > protocol.MaxWindow {
			ps.add("server.streams.window", "must be in [%v, %d] (0 = %v), got %v", Size(protocol.InitialStreamWindow), protocol.MaxWindow, Size(protocol.DefaultStreamWindow), st.Window)
		} else {
			out.StreamWindow = int(st.Window)
		}
	}
	if err := ps.err(doc.name); err != nil {
		return ServerSettings{}, err
	}
	return out, nil
}

func atMost(ps *problems, path string, v, most int64) {
	if v > most {
		ps.add(path, "must be at most %d, got %d", most, v)
	}
}

func admission(ps *problems, a *Admission, sel Selectors) *kernel.Options {
	const base = "server.admission"
	o := &kernel.Options{}
	n := 0
	if a.Global != nil {
		o.Global = rule(ps, base+".global", *a.Global)
		n += len(a.Global.Limits)
	}
	if len(a.Services) > 0 {
		o.Services = make(map[string]kernel.Rule, len(a.Services))
		for _, name := range sortedKeys(a.Services) {
			o.Services[name] = rule(ps, base+".services["+strconv.Quote(name)+"]", a.Services[name])
			n += len(a.Services[name].Limits)
		}
	}
	if len(a.Methods) > 0 {
		o.Methods = make(map[string]kernel.Rule, len(a.Methods))
		for _, name := range sortedKeys(a.Methods) {
			o.Methods[name] = rule(ps, base+".methods["+strconv.Quote(name)+"]", a.Methods[name])
			n += len(a.Methods[name].Limits)
		}
	}
	if q := a.Queue; q != nil {
		o.Queue = kernel.QueuePolicy{MaxQueuedCalls: q.MaxQueuedCalls, MaxQueuedBytes: int64(q.MaxQueuedBytes), MaxQueueDelay: q.MaxQueueDelay.Std(), QueueOneWayCalls: q.QueueOneWayCalls}
		zero := q.MaxQueuedCalls == 0 && q.MaxQueuedBytes == 0 && q.MaxQueueDelay == 0
		positive := q.MaxQueuedCalls > 0 && q.MaxQueuedBytes > 0 && q.MaxQueueDelay > 0
		if !zero && !positive {
			ps.add(base+".queue", "max_queued_calls, max_queued_bytes and max_queue_delay must be all zero (no waiting) or all positive")
		}
		if zero && q.QueueOneWayCalls {
			ps.add(base+".queue.queue_one_way_calls", "requires queueing (max_queued_calls, max_queued_bytes and max_queue_delay positive)")
		}
	}
	if p := a.Partition; p != nil {
		const pb = base + ".partition"
		pp := &kernel.PartitionPolicy{MaxPartitions: p.MaxPartitions, IdleTimeout: p.IdleTimeout.Std()}
		switch s, ok := sel[p.Selector]; {
		case p.Selector == "":
			ps.add(pb+".selector", "required: the name of a selector the program registers (%s)", selectorNames(sel))
		case !ok:
			ps.add(pb+".selector", "unknown selector %q (registered: %s)", p.Selector, selectorNames(sel))
		case s.Name == "" || s.Key == nil:
			ps.add(pb+".selector", "selector %q is registered without a Name or a Key (a program error)", p.Selector)
		default:
			pp.Selector = s
		}
		if p.MaxPartitions < 1 {
			ps.add(pb+".max_partitions", "required: at least 1, got %d", p.MaxPartitions)
		} else if p.MaxPartitions > kernel.MaxPartitionsLimit {
			ps.add(pb+".max_partitions", "at most %d (about 0.5 KB per key), got %d", kernel.MaxPartitionsLimit, p.MaxPartitions)
		}
		if p.IdleTimeout <= 0 {
			ps.add(pb+".idle_timeout", "required: positive, got %v", p.IdleTimeout)
		}
		pp.Rule = rule(ps, pb, Rule{Limits: p.Limits})
		n += len(p.Limits)
		o.Partition = pp
	}
	if n == 0 {
		ps.add(base, "at least one limit is required (remove server.admission to disable admission)")
	}
	return o
}

func selectorNames(sel Selectors) string {
	if len(sel) == 0 {
		return "none"
	}
	names := sortedKeys(sel)
	out := ""
	for i, n := range names {
		if i > 0 {
			out += ", "
		}
		out += strconv.Quote(n)
	}
	return out
}

// rule converts the limits of the rule at path, checking each.
func rule(ps *problems, path string, r Rule) kernel.Rule {
	if len(r.Limits) == 0 {
		ps.add(path+".limits", "a rule must have at least one limit")
		return kernel.Rule{}
	}
	out := kernel.Rule{Limits: make([]spi.Spec, 0, len(r.Limits))}
	var taken [2]string // the path of the concurrency and the rate limit
	for i, l := range r.Limits {
		p := fmt.Sprintf("%s.limits[%d]", path, i)
		spec, class, ok := limitSpec(ps, p, l)
		if !ok {
			continue
		}
		slot := 0
		if class == spi.ClassRate {
			slot = 1
		}
		if taken[slot] != "" {
			ps.add(p, "a rule has at most one %s limit; %s is one already", class, taken[slot])
			continue
		}
		taken[slot] = p
		out.Limits = append(out.Limits, spec)
	}
	return out
}

// paramKeys maps a kind's spi parameter names to document keys.
var paramKeys = map[string]string{
	concurrency.ParamLimit:           "limit",
	tokenbucket.ParamTokenLimit:      "token_limit",
	tokenbucket.ParamTokensPerPeriod: "tokens_per_period",
	tokenbucket.ParamPeriod:          "period",
	tokenbucket.ParamContinuous:      "continuous",
	window.ParamPermitLimit:          "limit",
	window.ParamWindow:               "window",
	window.ParamSegments:             "segments",
}

// limitSpec converts l (whose kind and parameters Parse checked) to its
// spi.Spec and validates it with its kind.
func limitSpec(ps *problems, path string, l Limit) (spi.Spec, spi.Class, bool) {
	var kind spi.LimiterKind
	params := spi.Params{}
	required := func(key string, set bool) bool {
		if !set {
			ps.add(path+"."+key, "required for kind %s", l.Kind)
		}
		return set
	}
	ok := true
	switch l.Kind {
	case KindConcurrency:
		kind = concurrency.Kind{}
		if ok = required("limit", l.Limit != nil); ok {
			params[concurrency.ParamLimit] = *l.Limit
		}
	case KindTokenBucket:
		kind = tokenbucket.Kind{}
		ok = required("token_limit", l.TokenLimit != nil)
		ok = required("tokens_per_period", l.TokensPerPeriod != nil) && ok
		ok = required("period", l.Period != nil) && ok
		if ok {
			params = tokenbucket.Options{TokenLimit: *l.TokenLimit, TokensPerPeriod: *l.TokensPerPeriod, Period: l.Period.Std(), Continuous: l.Continuous != nil && *l.Continuous}.Params()
		}
	case KindFixedWindow, KindSlidingWindow:
		ok = required("limit", l.Limit != nil)
		ok = required("window", l.Window != nil) && ok
		if l.Kind == KindSlidingWindow {
			ok = required("segments", l.Segments != nil) && ok
		}
		if ok {
			if l.Kind == KindFixedWindow {
				kind = window.FixedKind{}
				params = window.FixedSpec(*l.Limit, l.Window.Std()).Params
			} else {
				kind = window.SlidingKind{}
				params = window.SlidingSpec(*l.Limit, l.Window.Std(), *l.Segments).Params
			}
		}
	default:
		ps.add(path+".kind", "unknown limit kind %q", l.Kind)
		return spi.Spec{}, 0, false
	}
	if !ok {
		return spi.Spec{}, 0, false
	}
	if err := kind.Validate(params); err != nil {
		var pe *spi.ParamError
		if errors.As(err, &pe) && paramKeys[pe.Param] != "" {
			ps.add(path+"."+paramKeys[pe.Param], "%s", pe.Reason)
		} else {
			ps.add(path, "%v", err)
		}
		return spi.Spec{}, 0, false
	}
	return spi.Spec{Kind: kind.Name(), Params: params}, kind.Class(), true
}

func compression(ps *problems, c *Compression) codecs.Config {
	const base = "server.compression"
	out := codecs.Config{Off: c.Disabled, DecodeRatio: c.DecodeRatio, DecodeFloor: int(c.DecodeFloor)}
	if c.Codecs != nil {
		out.Codecs = []spi.Codec{}
		seen := map[string]bool{}
		for i, name := range c.Codecs {
			p := fmt.Sprintf("%s.codecs[%d]", base, i)
			cd, ok := codecs.ByName(name)
			switch {
			case name == "identity":
				ps.add(p, "identity needs no profile (an uncompressed body is sent as it is)")
			case !ok:
				ps.add(p, "unknown codec %q (built-in: zstd, s2, gzip, br)", name)
			case seen[name]:
				ps.add(p, "codec %q listed twice", name)
			default:
				out.Codecs = append(out.Codecs, cd)
			}
			seen[name] = true
		}
		if len(c.Codecs) == 0 && !c.Disabled {
			ps.add(base+".codecs", "empty: list at least one codec, or set disabled: true")
		}
	}
	if c.Policy != nil {
		out.Policy = policy(ps, base+".policy", *c.Policy)
	}
	if len(c.Methods) > 0 {
		out.Methods = make(map[string]codecs.Policy, len(c.Methods))
		for _, name := range sortedKeys(c.Methods) {
			out.Methods[name] = policy(ps, base+".methods["+strconv.Quote(name)+"]", c.Methods[name])
		}
	}
	const maxDecoded = math.MaxUint32
	if c.MaxDecodedSize > maxDecoded {
		ps.add(base+".max_decoded_size", "must be at most %d (4GiB - 1), got %d", int64(maxDecoded), int64(c.MaxDecodedSize))
	} else {
		out.MaxDecodedSize = int(c.MaxDecodedSize)
	}
	if c.DecodeFloor > maxDecoded {
		ps.add(base+".decode_floor", "must be at most %d (4GiB - 1), got %d", int64(maxDecoded), int64(c.DecodeFloor))
	}
	if len(ps.list) == 0 {
		// What the checks above do not cover, codecs reports as a whole.
		if _, err := out.Resolve(); err != nil {
			ps.add(base, "%v", err)
		}
	}
	return out
}

func policy(ps *problems, path string, p CompressionPolicy) codecs.Policy {
	if p.MinSavingPercent > 99 {
		ps.add(path+".min_saving_percent", "must be in [0, 99], got %d", p.MinSavingPercent)
	}
	return codecs.Policy{MinSize: int(p.MinSize), MinSaving: int(p.MinSaving), MinSavingPercent: p.MinSavingPercent}
}

// The server's connection limit defaults (server.ConnectionLimits).
const (
	defaultMaxConnections          = 1024
	defaultMaxHandshakes           = 64
	defaultMaxHandshakesPerAddress = 8
	maxConnections                 = math.MaxInt32
)

// connections checks c as the server does: a zero field takes its
// default, a smaller bound's default is at most the larger bound given,
// and each bound is at most the one that contains it.
func connections(ps *problems, c *Connections) {
	const base = "server.connections"
	mc := cmp.Or(c.MaxConnections, defaultMaxConnections)
	hs, hsNote := c.MaxHandshakes, ""
	if hs == 0 {
		hs, hsNote = min(defaultMaxHandshakes, mc), ", its default"
	}
	per := c.MaxHandshakesPerAddress
	if per == 0 {
		per = min(defaultMaxHandshakesPerAddress, hs)
	}
	mcNote := ""
	if c.MaxConnections == 0 {
		mcNote = ", its default"
	}
	if mc > maxConnections {
		ps.add(base+".max_connections", "must be at most %d, got %d", maxConnections, mc)
	}
	if hs > mc {
		ps.add(base+".max_handshakes", "must be at most max_connections (%d%s), got %d", mc, mcNote, hs)
	}
	if per > hs {
		ps.add(base+".max_handshakes_per_address", "must be at most max_handshakes (%d%s), got %d", hs, hsNote, per)
	}
}
