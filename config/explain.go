package config

import (
	"errors"
	"strings"
	"unicode"

	"github.com/sluicerpc/sluice/kernel"
	"github.com/sluicerpc/sluice/server"
)

// Settings returns s as the server takes it (server.Reconfigure).
func (s ServerSettings) Settings() server.Settings {
	return server.Settings{Admission: s.Admission, Calls: s.Calls, Connections: s.Connections,
		Governor: s.Governor, Compression: s.Compression, StreamWindow: s.StreamWindow}
}

// Explain returns err, as the server or its kernel returned it for this
// document's settings, in the document's terms: each problem of a
// *kernel.CandidateError (found in err's tree) becomes a Problem at the
// document's field path under server.admission, with the line of that
// field or of its nearest ancestor ("methods[\"echo/Nope\"]: no such
// method" at the line of the key). Other errors are returned as they are.
func (doc *Document) Explain(err error) error {
	var ce *kernel.CandidateError
	if !errors.As(err, &ce) {
		return err
	}
	ps := &problems{pos: doc.pos}
	for _, p := range ce.Problems {
		ps.add("server.admission"+documentPath(p.Field), "%s", p.Reason)
	}
	return ps.err(doc.name)
}

// documentPath turns a kernel.Options field path
// (`Methods["echo/Say"].Limits[0].limit`, `Queue.MaxQueueDelay`) into the
// document's (`.methods["echo/Say"].limits[0].limit`,
// `.queue.max_queue_delay`): identifiers in snake case, quoted keys and
// indexes as they are.
func documentPath(field string) string {
	var b strings.Builder
	for i := 0; i < len(field); {
		switch c := field[i]; {
		case c == '[':
			end := strings.IndexByte(field[i:], ']')
			if field[i+1] == '"' { // a quoted key may hold ']'
				end = closingQuote(field[i+1:]) + 2
			}
			if end < 0 || i+end >= len(field) {
				b.WriteString(field[i:])
				return b.String()
			}
			b.WriteString(field[i : i+end+1])
			i += end + 1
		case c == '.':
			i++
		default:
			j := i
			for j < len(field) && field[j] != '.' && field[j] != '[' {
				j++
			}
			b.WriteByte('.')
			b.WriteString(snake(field[i:j]))
			i = j
		}
	}
	return b.String()
}

// closingQuote is the index of the quote that closes the quoted string at
// the start of s, or -2 when there is none.
func closingQuote(s string) int {
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			return i
		}
	}
	return -2
}

// snake is "MaxQueueDelay" as "max_queue_delay"; "limit" stays.
func snake(s string) string {
	var b strings.Builder
	for i, r := range s {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}
