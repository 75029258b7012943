package main

import (
	"fmt"
	"io"

	"github.com/sluicerpc/sluice/control/admin"
)

// planMarks are the diff view's prefixes of the state actions.
var planMarks = map[string]string{
	"reconfigure": "~",
	"create":      "+",
	"retire":      "-",
	"reuse":       "=",
	"handover":    ">",
}

// printPlan prints p as a diff view: a header, one line per admission
// state (~ reconfigure, + create, - retire, = reuse, > handover) with its
// old -> new limit and effect, the partition layer and queue, then each
// other setting as "- Field: old" / "+ Field: new" and its effect.
func printPlan(w io.Writer, p *admin.Plan) {
	mode := "update"
	switch {
	case p.Disable && p.Enable:
		mode = "stays disabled"
	case p.Disable:
		mode = "disable"
	case p.Enable:
		mode = "enable"
	}
	fmt.Fprintf(w, "plan against generation %d (put with -if-match %d applies exactly this); admission: %s\n", p.Generation, p.Generation, mode)
	for _, s := range p.States {
		mark := planMarks[s.Action]
		if mark == "" {
			mark = "?"
		}
		kind := s.Kind
		if s.OldKind != "" && s.OldKind != s.Kind {
			kind = s.OldKind + " -> " + s.Kind
		}
		limit := fmt.Sprintf("limit %d -> %d", s.OldLimit, s.NewLimit)
		switch s.Action {
		case "create":
			limit = fmt.Sprintf("limit %d", s.NewLimit)
		case "retire":
			limit = fmt.Sprintf("limit %d", s.OldLimit)
		case "reuse":
			limit = fmt.Sprintf("limit %d, unchanged", s.NewLimit)
		}
		fmt.Fprintf(w, "%s %s (%s, %s): %s, in use %d, waiting %d: %s\n", mark, s.Name, kind, s.Action, limit, s.InUse, s.Waiters, s.Effect)
	}
	if pp := p.Partition; pp != nil {
		fmt.Fprintf(w, "partition %s (%s): %d keys, max %d -> %d, idle %s -> %s: %s\n", pp.Selector, pp.Action, pp.Keys, pp.OldMax, pp.NewMax, pp.OldIdle, pp.NewIdle, pp.Effect)
	}
	for _, q := range p.Queue {
		fmt.Fprintf(w, "queue: %s\n", q)
	}
	for _, c := range p.Changes {
		fmt.Fprintf(w, "- %s: %s\n+ %s: %s\n  %s\n", c.Field, c.Old, c.Field, c.New, c.Effect)
	}
	if len(p.States) == 0 && p.Partition == nil && len(p.Queue) == 0 && len(p.Changes) == 0 {
		fmt.Fprintln(w, "no change")
	}
}
