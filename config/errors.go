package config

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
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
	list    []Problem
	dropped int // problems beyond maxProblems, counted only
	pos     positions
}

// maxProblems bounds the problems a document reports: beyond it they are
// counted, and the last problem says how many more there were. A hostile
// document yielded a million problems (a 19 MB answer from the admin API,
// an 8 MB log line).
const maxProblems = 100

// maxProblemText bounds the bytes of a problem's path and of its reason:
// a key or value of a megabyte is cut, with the size it had.
const maxProblemText = 256

// add records a problem at path, located at path's position if known.
func (ps *problems) add(path, format string, args ...any) {
	ps.addAt(path, ps.pos.at(path), format, args...)
}

// addAt records a problem at a position. Its path and reason are made
// safe to print on one line (control characters escaped, so that a key of
// the document cannot forge a line in a log or a problem list) and cut to
// maxProblemText bytes; beyond maxProblems problems it only counts.
func (ps *problems) addAt(path string, at position, format string, args ...any) {
	if len(ps.list) >= maxProblems {
		ps.dropped++
		return
	}
	ps.list = append(ps.list, Problem{
		Path: printable(path), Line: at.line, Column: at.col,
		Reason: printable(fmt.Sprintf(format, args...)),
	})
}

// printable escapes the control characters of s (C0, DEL, C1 and the
// Unicode line and paragraph separators, as \n or \u2028) and cuts it
// to maxProblemText bytes at a rune boundary, saying how long it was.
func printable(s string) string {
	clean := true
	for _, r := range s {
		if isControl(r) {
			clean = false
			break
		}
	}
	if !clean {
		var b strings.Builder
		for _, r := range s {
			if isControl(r) {
				q := strconv.QuoteRune(r)
				b.WriteString(q[1 : len(q)-1])
				continue
			}
			b.WriteRune(r)
		}
		s = b.String()
	}
	if len(s) <= maxProblemText {
		return s
	}
	cut := maxProblemText
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d bytes)", s[:cut], len(s))
}

func isControl(r rune) bool {
	return r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == '\u2028' || r == '\u2029' || r == utf8.RuneError
}

func (ps *problems) err(name string) error {
	if len(ps.list) == 0 {
		return nil
	}
	out := slices.Clone(ps.list)
	slices.SortStableFunc(out, func(a, b Problem) int {
		return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Column, b.Column), strings.Compare(a.Path, b.Path))
	})
	if ps.dropped > 0 {
		out = append(out, Problem{Reason: fmt.Sprintf("and %d more problems (at most %d are listed)", ps.dropped, maxProblems)})
	}
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
