package protocol

import (
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The tables of docs/protocol.md are the wire's reference for third
// parties: these tests fail when a table and the code disagree (issue 25
// section 4), in either direction.

// docTable returns the body rows of the first markdown table whose header
// row starts with the given first cells, each row split into its trimmed
// cells.
func docTable(t *testing.T, path string, header ...string) [][]string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var rows [][]string
	in := false
	for line := range strings.Lines(string(b)) {
		line = strings.TrimSpace(line)
		if !strings.HasPrefix(line, "|") {
			if in {
				break
			}
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		switch {
		case !in && len(cells) >= len(header) && slices.Equal(cells[:len(header)], header):
			in = true
		case in && strings.Trim(cells[0], "-: ") == "":
			// the separator row
		case in:
			rows = append(rows, cells)
		}
	}
	require.NotEmpty(t, rows, "%s: no table headed %q", path, header)
	return rows
}

// flagList parses "OneWay, Compressed (server → client only), EndStream"
// or "none" into flags, each item's first word a flag's name.
func flagList(t *testing.T, cell string) Flags {
	t.Helper()
	if cell == "none" {
		return 0
	}
	var f Flags
	for item := range strings.SplitSeq(cell, ",") {
		name := strings.Fields(item)[0]
		i := slices.IndexFunc(flagNames[:], func(n struct {
			f    Flags
			name string
		}) bool {
			return n.name == name
		})
		require.GreaterOrEqual(t, i, 0, "unknown flag %q in %q", name, cell)
		f |= flagNames[i].f
	}
	return f
}

func TestTheFrameTypesTableIsTheCodes(t *testing.T) {
	rows := docTable(t, "../docs/protocol.md", "Type", "Name", "Direction", "id", "Allowed flags")
	seen := map[FrameType]bool{}
	for _, r := range rows {
		n, err := strconv.Atoi(r[0])
		require.NoError(t, err, "row %q", r)
		ft := FrameType(n)
		require.True(t, ft.Valid(), "the table lists type %d, which the code does not know", n)
		seen[ft] = true
		require.Equal(t, ft.String(), r[1], "type %d's name", n)
		id := map[string]idRule{"0": idZero, "≠ 0": idNonZero}[r[3]]
		if strings.HasPrefix(r[3], "any") {
			id = idAny
		}
		require.Equal(t, frameRules[ft].id, id, "%v's id rule %q", ft, r[3])
		require.Equal(t, frameRules[ft].flags, flagList(t, r[4]), "%v's allowed flags %q", ft, r[4])
	}
	for ft := FrameHandshake; ft.Valid(); ft++ {
		require.True(t, seen[ft], "the table lacks frame type %v", ft)
	}
}

func TestTheFlagsTableIsTheCodes(t *testing.T) {
	rows := docTable(t, "../docs/protocol.md", "Bit", "Name", "Allowed on", "Meaning")
	var documented Flags
	for _, r := range rows {
		bit, err := strconv.ParseUint(strings.Trim(r[0], "`"), 0, 16)
		require.NoError(t, err, "row %q", r)
		f := Flags(bit)
		require.Equal(t, f.String(), r[1], "bit %s's name", r[0])
		documented |= f
		// "Allowed on" names frame types, each item's first word ("Request
		// with Stream", "Message (client → server only)").
		var on []string
		for item := range strings.SplitSeq(r[2], ",") {
			on = append(on, strings.Fields(item)[0])
		}
		var want []string
		for ft := FrameHandshake; ft.Valid(); ft++ {
			if frameRules[ft].flags&f != 0 {
				want = append(want, ft.String())
			}
		}
		require.ElementsMatch(t, want, on, "the frame types that allow %v", f)
	}
	var known Flags
	for _, n := range flagNames {
		known |= n.f
	}
	require.Equal(t, known, documented, "the flags the table lists")
}

var codeRow = regexp.MustCompile(`^[0-9]+$`)

func TestTheStatusCodesTableIsTheCodes(t *testing.T) {
	rows := docTable(t, "../docs/protocol.md", "Code", "Name", "gRPC meaning", "When sluice uses it")
	var listed []Code
	for _, r := range rows {
		require.Regexp(t, codeRow, r[0])
		n, _ := strconv.Atoi(r[0])
		c := Code(n)
		require.Equal(t, c.String(), r[1], "code %d's name", n)
		listed = append(listed, c)
	}
	var want []Code
	for c := range Code(len(codeNames)) {
		want = append(want, c)
	}
	require.Equal(t, want, listed, "the codes the table lists, in order")
}
