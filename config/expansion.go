package config

import "go.yaml.in/yaml/v3"

// The decoder's budget for what aliases and merge keys make of a
// document (issue 26): a document names a subtree once and may use it
// many times, so the work of decoding is not bounded by its size unless
// it is counted. Three bounds, each a problem at the line where it is
// reached, after which the decoder stops:
//
//   - a merge key (<<) that reaches a mapping it is expanding (a cycle:
//     "server: &s {<<: *s}") is refused, whatever the depth;
//   - merges nest at most maxMergeDepth deep (a chain of anchors, each
//     merging the previous one, overflowed the stack at 600,000);
//   - the nodes visited, merged pairs included, are at most
//     expansionPerByte per byte of the document plus expansionFloor: a
//     document without aliases visits at most one node per two bytes
//     ("[1,1,1]"), a configuration about one per six, so only reuse of
//     8 to 24 times its size (a merge that doubles at every level, an
//     alias of a large subtree used everywhere) reaches it.
//   - the bytes of the field paths the decoder records (one per value,
//     for the problems' positions) are at most pathBytesPerByte per byte
//     of the document plus pathBytesFloor: a 100 KiB service name holding
//     1,000 limits (144 KB) made 431 MB of paths.
const (
	maxMergeDepth    = 64
	expansionPerByte = 4
	expansionFloor   = 4096
	pathBytesPerByte = 64
	pathBytesFloor   = 1 << 20
)

// budget counts the decoder's expansion. The zero value is exhausted;
// newBudget sizes one for a document.
type budget struct {
	nodes     int                 // visits left
	pathBytes int                 // path bytes left
	expanding map[*yaml.Node]bool // the mappings whose pairs are being collected
	depth     int                 // merges being expanded
	exhausted bool                // a bound was reached and reported
}

func newBudget(size int) budget {
	return budget{
		nodes:     expansionPerByte*size + expansionFloor,
		pathBytes: pathBytesPerByte*size + pathBytesFloor,
		expanding: map[*yaml.Node]bool{},
	}
}

// visit spends one node at n; it reports false, and records the problem
// once, when the budget is spent.
func (d *decoder) visit(n *yaml.Node, path string) bool {
	if d.b.exhausted {
		return false
	}
	if d.b.nodes--; d.b.nodes >= 0 {
		return true
	}
	d.stop(path, n, "the document expands beyond %d nodes through its aliases and merge keys (at most %d per byte of the document, plus %d); decoding stopped here",
		d.limit, expansionPerByte, expansionFloor)
	return false
}

// record spends the bytes of the path recorded for the value n; it
// reports false, and records the problem once, when the budget is spent.
func (d *decoder) record(n *yaml.Node, path string) bool {
	if d.b.exhausted {
		return false
	}
	if d.b.pathBytes -= len(path); d.b.pathBytes >= 0 {
		return true
	}
	d.stop("", n, "the document's field paths exceed %d bytes (at most %d per byte of the document, plus %d): its keys are too long for its nesting; decoding stopped here",
		d.pathLimit, pathBytesPerByte, pathBytesFloor)
	return false
}

// stop records a problem that ends the decoding.
func (d *decoder) stop(path string, n *yaml.Node, format string, args ...any) {
	d.b.exhausted = true
	d.ps.addAt(path, position{n.Line, n.Column}, format, args...)
}

// enter marks mapping n as expanding for pairs; it reports false, having
// recorded the problem, for a mapping already expanding (a merge cycle)
// or one merge too deep. at is the merge key's value (the alias), where
// the problem is located. The caller leaves with leave(n) when enter
// reported true.
func (d *decoder) enter(n, at *yaml.Node, path string, merged bool) bool {
	if d.b.exhausted {
		return false
	}
	if d.b.expanding[n] {
		d.stop(path, at, "a merge key (<<) refers to a mapping that contains it (line %d): a cycle", n.Line)
		return false
	}
	if merged && d.b.depth >= maxMergeDepth {
		d.stop(path, at, "merge keys (<<) nested deeper than %d", maxMergeDepth)
		return false
	}
	d.b.expanding[n] = true
	if merged {
		d.b.depth++
	}
	return true
}

func (d *decoder) leave(n *yaml.Node, merged bool) {
	delete(d.b.expanding, n)
	if merged {
		d.b.depth--
	}
}
