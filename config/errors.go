package config

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Problem is one thing wrong with a document.
type Problem struct {
	// Path is the field path in the document, for example
	// `server.admission.methods["a/b"].limits[0].limit`; "" is the whole
	// document.
	Path string
	// Line and Column locate the value (1-based) in the file; 0 when the
	// document was not read from a file (built in Go).
	Line, Column int
	// Reason says what is wrong.
	Reason string
}

func (p Problem) String() string {
	var b strings.Builder
	if p.Line > 0 {
		fmt.Fprintf(&b, "%d:%d: ", p.Line, p.Column)
	}
	if p.Path != "" {
		b.WriteString(p.Path)
		b.WriteString(": ")
	}
	b.WriteString(p.Reason)
	return b.String()
}

// Error lists every problem of a document, in the order of the file (by
// line, column, then path).
type Error struct {
	// Name is the document's name (its file path), "" if none.
	Name     string
	Problems []Problem
}

func (e *Error) Error() string {
	var b strings.Builder
	prefix := "config: "
	if e.Name != "" {
		prefix += e.Name + ":"
	}
	for i, p := range e.Problems {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(prefix)
		if e.Name != "" && p.Line == 0 {
			b.WriteByte(' ')
		}
		b.WriteString(p.String())
	}
	return b.String()
}

// problems collects a document's problems, with the positions of its
// values.
type problems struct {
	list []Problem
	pos  positions
}

// add records a problem at path, located at path's position if known.
func (ps *problems) add(path, format string, args ...any) {
	ps.addAt(path, ps.pos.at(path), format, args...)
}

func (ps *problems) addAt(path string, at position, format string, args ...any) {
	ps.list = append(ps.list, Problem{Path: path, Line: at.line, Column: at.col, Reason: fmt.Sprintf(format, args...)})
}

func (ps *problems) err(name string) error {
	if len(ps.list) == 0 {
		return nil
	}
	out := slices.Clone(ps.list)
	slices.SortStableFunc(out, func(a, b Problem) int {
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column), strings.Compare(a.Path, b.Path))
	})
	return &Error{Name: name, Problems: out}
}

// position is where a value is in the file.
type position struct{ line, col int }

// positions maps field paths to where their values are.
type positions map[string]position

// at returns the position of path, or of its nearest ancestor that has
// one (a missing field is located at the mapping that lacks it).
func (p positions) at(path string) position {
	for {
		if at, ok := p[path]; ok {
			return at
		}
		if path == "" {
			return position{}
		}
		path = parentPath(path)
	}
}

// parentPath strips the last segment (".key", "[0]" or `["key"]`) of path.
func parentPath(path string) string {
	last := 0
	for i := 0; i < len(path); {
		switch path[i] {
		case '.':
			last = i
			i++
		case '[':
			last = i
			if i+1 < len(path) && path[i+1] == '"' {
				q, err := strconv.QuotedPrefix(path[i+1:])
				if err != nil {
					return path[:last]
				}
				i += 1 + len(q)
			} else {
				i++
			}
		default:
			i++
		}
	}
	return path[:last]
}
