package server

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/sluicerpc/sluice/codecs"
	"github.com/sluicerpc/sluice/kernel"
)

// ReconfigurePlan is what Reconfigure would do, computed without changing
// anything: the admission plan (kernel.PlanPublish: states reused,
// reconfigured, created, handed over, retired; the partition namespace;
// the queue) and each other setting that changes.
type ReconfigurePlan struct {
	// Generation is the generation the plan was computed against.
	Generation uint64
	// Admission is the kernel's plan (Disable set when the candidate
	// disables admission).
	Admission *kernel.Plan
	// Changes are the settings besides admission that change, in a fixed
	// order (calls, connections, governor, compression, streams); empty
	// when none does.
	Changes []SettingChange
}

// SettingChange is one setting that changes: its field, its value before
// and after (defaults filled in), and what changes for running and new
// work.
type SettingChange struct {
	Field    string
	Old, New string
	Effect   string
}

// PlanReconfigure validates st as Reconfigure(expected, st) would (the
// same errors, a moved generation included) and returns what it would do,
// without doing it. Reconfiguring with the same candidate right after,
// nothing else written in between, does what the plan says.
func (s *Server) PlanReconfigure(expected uint64, st Settings) (*ReconfigurePlan, error) {
	v, err := s.validateSettings(st)
	if err != nil {
		return nil, err
	}
	s.setMu.Lock()
	defer s.setMu.Unlock()
	ap, err := s.kernel.PlanPublish(expected, st.Admission)
	if err != nil {
		return nil, err
	}
	p := &ReconfigurePlan{Generation: ap.Generation, Admission: ap}
	change := func(field string, old, nw any, effect string) {
		o, n := fmt.Sprint(old), fmt.Sprint(nw)
		if o != n {
			p.Changes = append(p.Changes, SettingChange{Field: field, Old: o, New: n, Effect: effect})
		}
	}
	cc := s.callCap
	change("Calls.PerConnection", cc.PerConnection, v.calls.PerConnection, bound(cc.PerConnection, v.calls.PerConnection,
		"every connection", "calls in flight finish; new calls are refused (call_capacity) until a connection has fewer than %d", "connections connected before keep the value of their handshake as a hint"))
	change("Calls.PerServer", cc.PerServer, v.calls.PerServer, bound(cc.PerServer, v.calls.PerServer,
		"the server", "calls in flight finish; new calls are refused (call_capacity) until fewer than %d are active or reserved", ""))
	cl := s.gate.Limits()
	change("Connections.MaxConnections", cl.MaxConnections, v.gate.MaxConnections, bound(cl.MaxConnections, v.gate.MaxConnections,
		"connections", "live connections are kept; new ones are closed at accept (connection_limit) until fewer than %d are live", ""))
	change("Connections.MaxHandshakes", cl.MaxHandshakes, v.gate.MaxHandshakes, bound(cl.MaxHandshakes, v.gate.MaxHandshakes,
		"handshakes", "handshakes under way finish; new connections are closed at accept (handshake_limit) until fewer than %d are in handshake", ""))
	change("Connections.MaxHandshakesPerAddress", cl.MaxHandshakesPerAddress, v.gate.MaxHandshakesPerAddress, bound(cl.MaxHandshakesPerAddress, v.gate.MaxHandshakesPerAddress,
		"handshakes per address", "handshakes under way finish; an address's new connections are closed at accept (handshake_per_address) until it has fewer than %d", ""))
	gl, nl := s.governor.Limits(), st.Governor
	def := nl.WithDefaults()
	change("Governor.Decodes", gl.Decodes, def.Decodes, bound64(gl.Decodes, def.Decodes,
		"decodes", "running decodes finish; new ones wait their turn until fewer than %d run"))
	change("Governor.RetainedBytes", gl.RetainedBytes, def.RetainedBytes, bound64(gl.RetainedBytes, def.RetainedBytes,
		"retained bytes", "what calls hold stays held; new compressed requests are refused (ResourceExhausted) while more than %d bytes are retained"))
	change("Governor.DecodedBytes", gl.DecodedBytes, def.DecodedBytes, bound64(gl.DecodedBytes, def.DecodedBytes,
		"decoded bytes", "what calls hold stays held; new decodes are refused (ResourceExhausted) while more than %d bytes are decoded"))
	change("Governor.StreamBytes", gl.StreamBytes, def.StreamBytes, bound64(gl.StreamBytes, def.StreamBytes,
		"stream bytes", "buffered messages stay; queued streams are refused (stream_bytes) while more than %d bytes are buffered"))
	oc, nc := s.comp.Load(), v.comp
	const compEffect = "from the next use: responses and stream messages compressed after it follow it, compressed requests checked after it are held to it"
	change("Compression.Codecs", describeCodecs(oc.res), describeCodecs(nc.res),
		"connections that handshake afterwards negotiate from the new list; a profile no longer listed is refused on every request that uses it (InvalidArgument) and stops compressing responses, on every connection")
	change("Compression.Policy", oc.res.Policy(""), nc.res.Policy(""), compEffect)
	change("Compression.Methods", describeMethodPolicies(oc), describeMethodPolicies(nc), compEffect)
	change("Compression.MaxDecodedSize", oc.res.MaxDecodedSize(), nc.res.MaxDecodedSize(), compEffect)
	change("Compression.DecodeRatio", decodeRatio(oc.config), decodeRatio(nc.config), compEffect)
	change("Compression.DecodeFloor", decodeFloor(oc.config), decodeFloor(nc.config), compEffect)
	change("StreamWindow", s.streamWindow.Load(), v.window, "streams whose handler starts afterwards are grown to it; running streams keep their window")
	return p, nil
}

// bound describes a change of a capacity bound.
func bound(old, nw int, what, shrink, note string) string {
	var e string
	if nw > old {
		e = fmt.Sprintf("%d more %s may be taken at once", nw-old, what)
	} else {
		e = fmt.Sprintf(shrink, nw)
	}
	if note != "" {
		e += "; " + note
	}
	return e
}

func bound64(old, nw int64, what, shrink string) string {
	return bound(int(old), int(nw), what, shrink, "")
}

// describeCodecs is the accepted profiles, "off" for none.
func describeCodecs(r *codecs.Resolved) string {
	if n := r.Names(); len(n) > 0 {
		return strings.Join(n, ",")
	}
	return "off"
}

// describeMethodPolicies lists the per-method policy overrides.
func describeMethodPolicies(cp *compression) string {
	names := slices.Sorted(maps.Keys(cp.config.Methods))
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = fmt.Sprintf("%s=%v", n, cp.res.Policy(n))
	}
	return "[" + strings.Join(out, " ") + "]"
}

func decodeRatio(c codecs.Config) int {
	if c.DecodeRatio == 0 {
		return codecs.DefaultDecodeRatio
	}
	return c.DecodeRatio
}

func decodeFloor(c codecs.Config) int {
	if c.DecodeFloor == 0 {
		return codecs.DefaultDecodeFloor
	}
	return c.DecodeFloor
}
