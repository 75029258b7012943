package governor_test

import (
	"fmt"
	"os"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/kernel/governor"
)

// TestTheBudgetsTableIsTheLimits (issue 25 section 4): docs/governor.md's
// table of budgets names every field of Limits, with its default, and no
// field the code does not have.
func TestTheBudgetsTableIsTheLimits(t *testing.T) {
	b, err := os.ReadFile("../../docs/governor.md")
	require.NoError(t, err)
	rows := map[string]string{} // bound -> default, for rows naming a Limits field
	var order []string
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
		case !in && slices.Equal(cells, []string{"bound", "default", "why"}):
			in = true
		case in && strings.Trim(cells[0], "-: ") == "":
		case in:
			name := strings.Trim(cells[0], "`")
			if !strings.ContainsAny(name, ". ") { // not Compression.MaxDecodedSize, "expansion bound"
				rows[name] = cells[1]
				order = append(order, name)
			}
		}
	}
	require.True(t, in, "no budgets table in docs/governor.md")

	d := governor.DefaultLimits()
	v := reflect.ValueOf(d)
	var fields []string
	for i := range v.NumField() {
		name := v.Type().Field(i).Name
		fields = append(fields, name)
		want := "GOMAXPROCS"
		if name == "Decodes" {
			require.Equal(t, int64(max(1, runtime.GOMAXPROCS(0))), d.Decodes)
		} else {
			want = fmt.Sprintf("%d MiB", v.Field(i).Int()>>20)
			require.Zero(t, v.Field(i).Int()%(1<<20), "%s's default is not whole MiB: write the table's form", name)
		}
		require.Equal(t, want, rows[name], "%s's default in the table", name)
	}
	require.Equal(t, fields, order, "the Limits fields the table lists, in order")
}
