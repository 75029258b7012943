package admin

import (
	"errors"
	"time"

	"github.com/sluicerpc/sluice/config"
	"github.com/sluicerpc/sluice/control"
	"github.com/sluicerpc/sluice/kernel"
	"github.com/sluicerpc/sluice/server"
)

// The JSON bodies of the API. Field names are the contract.

// Problem is one problem of a rejected document (config.Problem): its
// field path, line and column in the document (1-based; 0 when unknown),
// and the reason.
type Problem struct {
	Path   string `json:"path"`
	Line   int    `json:"line"`
	Column int    `json:"column"`
	Reason string `json:"reason"`
}

// ErrorBody is the body of every error response.
type ErrorBody struct {
	Error string `json:"error"`
	// Problems: 422, the document's problems.
	Problems []Problem `json:"problems,omitempty"`
	// Expected and Current: 412, the generation the request named and
	// the current one.
	Expected *uint64 `json:"expected,omitempty"`
	Current  *uint64 `json:"current,omitempty"`
	// Generation: the current generation (404 of GET /v1/config).
	Generation *uint64 `json:"generation,omitempty"`
}

// Result is the body of a successful PUT or DELETE.
type Result struct {
	// Generation is the generation in force afterwards (the new ETag);
	// Previous the one the change was derived from (If-Match).
	Generation uint64 `json:"generation"`
	Previous   uint64 `json:"previous"`
	// Unchanged: the document equals the one in force, nothing was
	// published.
	Unchanged bool      `json:"unchanged"`
	Source    string    `json:"source"`
	Origin    string    `json:"origin"`
	AppliedAt time.Time `json:"applied_at"`
}

// Status is the body of GET /v1/status.
type Status struct {
	// Generation is the server's generation (the ETag);
	// ConfigGeneration the one the document in force was applied at.
	// InSync: they are equal (no writer outside the Controller published
	// since).
	Generation       uint64 `json:"generation"`
	ConfigGeneration uint64 `json:"config_generation"`
	InSync           bool   `json:"in_sync"`
	// HasDocument is false while the server runs the configuration it was
	// started with; Source is then "initial".
	HasDocument bool      `json:"has_document"`
	Source      string    `json:"source"`
	Origin      string    `json:"origin"`
	Revision    int64     `json:"revision"`
	AppliedAt   time.Time `json:"applied_at"`
	// LastRejection is the last change that was not applied, nil if none
	// yet (a later success does not clear it: compare the times).
	LastRejection *Rejection `json:"last_rejection"`
	// Counts are the changes of each source by outcome.
	Counts map[string]Counts `json:"counts"`
	// Sources is what each source last said of its input: a file that
	// cannot be read says so here (its last error, since when), while
	// the configuration in force is kept.
	Sources map[string]SourceHealth `json:"sources"`
}

// SourceHealth is a source's last report of its input.
type SourceHealth struct {
	Origin string `json:"origin"`
	// OK is false while the source cannot read its input; LastError says
	// why.
	OK        bool      `json:"ok"`
	LastError string    `json:"last_error,omitempty"`
	At        time.Time `json:"at"`
	Since     time.Time `json:"since"`
}

// Rejection is a change that was not applied.
type Rejection struct {
	Source   string    `json:"source"`
	Origin   string    `json:"origin"`
	Revision int64     `json:"revision"`
	At       time.Time `json:"at"`
	Error    string    `json:"error"`
	Problems []Problem `json:"problems,omitempty"`
}

// Counts are one source's changes by outcome (control.Counts).
type Counts struct {
	Applied   uint64 `json:"applied"`
	Unchanged uint64 `json:"unchanged"`
	Rejected  uint64 `json:"rejected"`
	Retried   uint64 `json:"retried"`
}

// Plan is the body of POST /v1/config?dry_run=true
// (server.ReconfigurePlan): what the PUT of the same document would do.
type Plan struct {
	// Generation is the generation the plan was computed against (the
	// response's ETag).
	Generation uint64 `json:"generation"`
	// Enable: admission is disabled and the document enables it;
	// Disable: the document disables it.
	Enable  bool        `json:"enable"`
	Disable bool        `json:"disable"`
	States  []StatePlan `json:"states"`
	// Partition is nil when there is no partition layer before or after.
	Partition *PartitionPlan `json:"partition"`
	// Queue: one line per queue policy field that changes.
	Queue []string `json:"queue"`
	// Changes are the other settings that change (calls, connections,
	// governor, compression, streams).
	Changes []SettingChange `json:"changes"`
}

// StatePlan is the plan of one admission state (kernel.StatePlan).
type StatePlan struct {
	// Name is the state ("method:echo/Say/rate"), as kernel.ScopeStats
	// names it; Field the candidate's field binding it ("" when retired).
	Name  string `json:"name"`
	Field string `json:"field"`
	// Class: "concurrency" or "rate".
	Class string `json:"class"`
	// Action: reuse, reconfigure, create, handover, retire.
	Action  string `json:"action"`
	Kind    string `json:"kind"`
	OldKind string `json:"old_kind,omitempty"`
	// Old and New are the limiter parameters (durations in
	// nanoseconds); Old is null for create, New for retire.
	Old      map[string]int64 `json:"old"`
	New      map[string]int64 `json:"new"`
	OldLimit int64            `json:"old_limit"`
	NewLimit int64            `json:"new_limit"`
	InUse    int64            `json:"in_use"`
	Waiters  int              `json:"waiters"`
	// Effect says what changes for queued and active requests.
	Effect string `json:"effect"`
}

// PartitionPlan is the plan of the partition layer (kernel.PartitionPlan).
type PartitionPlan struct {
	// Action: keep, new, retire.
	Action   string `json:"action"`
	Selector string `json:"selector"`
	Keys     int64  `json:"keys"`
	OldMax   int64  `json:"old_max"`
	NewMax   int64  `json:"new_max"`
	// OldIdle and NewIdle are durations as Go writes them ("5m0s").
	OldIdle string `json:"old_idle"`
	NewIdle string `json:"new_idle"`
	Effect  string `json:"effect"`
}

// SettingChange is one setting besides admission that changes.
type SettingChange struct {
	Field  string `json:"field"`
	Old    string `json:"old"`
	New    string `json:"new"`
	Effect string `json:"effect"`
}

func planJSON(p *server.ReconfigurePlan) Plan {
	out := Plan{Generation: p.Generation, States: []StatePlan{}, Queue: []string{}, Changes: []SettingChange{}}
	if a := p.Admission; a != nil {
		out.Enable, out.Disable = a.Enable, a.Disable
		for _, s := range a.States {
			out.States = append(out.States, StatePlan{
				Name: s.Name, Field: s.Field, Class: s.Class.String(), Action: string(s.Action),
				Kind: s.Kind, OldKind: s.OldKind, Old: s.Old, New: s.New,
				OldLimit: s.OldLimit, NewLimit: s.NewLimit, InUse: s.InUse, Waiters: s.Waiters, Effect: s.Effect,
			})
		}
		if pp := a.Partition; pp != nil {
			out.Partition = &PartitionPlan{
				Action: pp.Action, Selector: pp.Selector, Keys: pp.Keys, OldMax: pp.OldMax, NewMax: pp.NewMax,
				OldIdle: pp.OldIdle.String(), NewIdle: pp.NewIdle.String(), Effect: pp.Effect,
			}
		}
		out.Queue = append(out.Queue, a.Queue...)
	}
	for _, c := range p.Changes {
		out.Changes = append(out.Changes, SettingChange(c))
	}
	return out
}

func statusJSON(st control.Status, gen uint64) Status {
	cur := st.Current
	out := Status{
		Generation: gen, ConfigGeneration: cur.Generation, InSync: gen == cur.Generation,
		HasDocument: cur.Document != nil, Source: sourceName(cur), Origin: cur.Origin, Revision: cur.Revision,
		AppliedAt: cur.At, Counts: map[string]Counts{},
	}
	if r := st.LastRejection; r != nil {
		out.LastRejection = &Rejection{Source: string(r.Source), Origin: r.Origin, Revision: r.Revision, At: r.At,
			Error: r.Err.Error(), Problems: problemsOf(r.Err)}
	}
	for s, n := range st.Counts {
		out.Counts[string(s)] = Counts(n)
	}
	out.Sources = map[string]SourceHealth{}
	for s, h := range st.Sources {
		sh := SourceHealth{Origin: h.Origin, OK: h.Err == nil, At: h.At, Since: h.Since}
		if h.Err != nil {
			sh.LastError = h.Err.Error()
		}
		out.Sources[string(s)] = sh
	}
	return out
}

// sourceName is a's source, "initial" for the server's own configuration.
func sourceName(a control.Applied) string {
	if a.Document == nil {
		return "initial"
	}
	return string(a.Source)
}

// problemsOf lists the document problems in err (a *config.Error), nil if
// none.
func problemsOf(err error) []Problem {
	var ce *config.Error
	if !errors.As(err, &ce) {
		var ke *kernel.CandidateError
		if errors.As(err, &ke) {
			out := make([]Problem, len(ke.Problems))
			for i, p := range ke.Problems {
				out[i] = Problem{Path: p.Field, Reason: p.Reason}
			}
			return out
		}
		return nil
	}
	out := make([]Problem, len(ce.Problems))
	for i, p := range ce.Problems {
		out[i] = Problem(p)
	}
	return out
}
