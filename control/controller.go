package control

import (
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"sync"
	"time"

	"github.com/sluicerpc/sluice/config"
	"github.com/sluicerpc/sluice/kernel"
	"github.com/sluicerpc/sluice/server"
	"go.opentelemetry.io/otel/metric"
)

// maxRetries bounds how often a Latest change is planned again because a
// writer outside the Controller published between its read of the
// generation and its publication.
const maxRetries = 3

// Options configure a Controller.
type Options struct {
	// Selectors are the partition selectors documents may name.
	Selectors config.Selectors
	// Logger receives a line for every change applied, left unchanged
	// or rejected; nil discards them.
	Logger *slog.Logger
	// Now is the clock of Applied.At and Rejection.At; nil: time.Now.
	Now func() time.Time
	// MeterProvider, when not nil, receives sluice.config.reloads (the
	// changes of each source by outcome), observed from Status at
	// collection time until Close; nil: no metrics.
	MeterProvider metric.MeterProvider
}

// Controller owns the runtime configuration of one server. Its methods
// are safe for concurrent use; changes are applied one at a time.
type Controller struct {
	srv *server.Server
	o   Options

	mu       sync.Mutex
	cur      Applied
	rejected *Rejection
	counts   map[Source]*Counts
	health   map[Source]SourceHealth // ReportSource (source_health.go)
	reg      metric.Registration     // of the metrics callback, until Close
}

// Counts are a source's changes by outcome.
type Counts struct {
	// Applied changes published a new generation; Unchanged ones equal
	// the configuration in force; Rejected ones changed nothing
	// (invalid, a stale generation, a closed server); Retried counts
	// re-plans of Latest changes after a writer outside the Controller
	// published.
	Applied, Unchanged, Rejected, Retried uint64
}

// New returns the Controller of srv, whose configuration in force is the
// one srv was built with (Applied.Document nil) until the first Apply.
func New(srv *server.Server, o Options) *Controller {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	c := &Controller{srv: srv, o: o, counts: map[Source]*Counts{}}
	c.cur = Applied{Generation: srv.Admission().Generation(), At: o.Now()}
	if o.MeterProvider != nil {
		reg, err := c.registerMetrics(o.MeterProvider)
		if err != nil {
			// Only an SDK that refuses these names could: the
			// Controller works without its metrics.
			o.Logger.Error("control: metrics not registered", "err", err)
		}
		c.reg = reg
	}
	return c
}

// Server returns the server the Controller owns the configuration of.
// Reading it (Stats, Generation) is what the admin API's event stream and
// dashboard do; changing its configuration other than through the
// Controller makes Generation differ from Current().Generation (see
// there).
func (c *Controller) Server() *server.Server { return c.srv }

// Current returns the configuration in force.
func (c *Controller) Current() Applied {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.cur
}

// Generation returns the server's current generation (its kernel's). It
// equals Current().Generation unless a writer outside the Controller
// published since the Controller's last change; a change derived from
// another generation is refused by Apply.
func (c *Controller) Generation() uint64 {
	return c.srv.Admission().Generation()
}

// Status is the Controller's state for operators.
type Status struct {
	Current Applied
	// LastRejection is the last change that was not applied (nil: none
	// yet). A later successful change does not clear it; compare At.
	LastRejection *Rejection
	Counts        map[Source]Counts
	// Sources is what each source last reported of its input
	// (ReportSource); a source that never reported is absent.
	Sources map[Source]SourceHealth
}

// Status returns the configuration in force, the last rejection and the
// counts by source.
func (c *Controller) Status() Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := Status{Current: c.cur, Counts: map[Source]Counts{}}
	if c.rejected != nil {
		r := *c.rejected
		st.LastRejection = &r
	}
	for s, n := range c.counts {
		st.Counts[s] = *n
	}
	st.Sources = make(map[Source]SourceHealth, len(c.health))
	for s, h := range c.health {
		st.Sources[s] = h
	}
	return st
}

// Apply parses ch's document, converts it, and applies it as one
// server.Reconfigure. It returns the configuration in force afterwards,
// or an error that changed nothing: a *config.Error for an invalid
// document (its problems with their paths and lines, the kernel's
// included), a *kernel.PublicationConflictError when ch.Expected is not
// the current generation (or, for a Latest change, when writers outside
// the Controller kept publishing), kernel.ErrLifecycleClosed once the
// server stopped.
func (c *Controller) Apply(ch Change) (Applied, error) {
	doc, st, err := c.parse(ch)
	c.mu.Lock()
	defer c.mu.Unlock()
	if err != nil {
		return c.cur, c.reject(ch, err)
	}
	for attempt := 0; ; attempt++ {
		expected := ch.Expected
		if ch.Latest {
			expected = c.srv.Admission().Generation()
		}
		if cur := c.srv.Admission().Generation(); cur != expected {
			return c.cur, c.reject(ch, &kernel.PublicationConflictError{Expected: expected, Current: cur})
		}
		if c.cur.Doc != nil && c.cur.Generation == expected && reflect.DeepEqual(c.cur.Doc.Server, doc.Server) {
			c.count(ch.Source).Unchanged++
			c.o.Logger.Info("configuration unchanged", changeAttrs(ch, "generation", expected)...)
			// The same configuration, now also this change's: it is the one
			// to report (an etcd revision equal to the file in force is the
			// revision the server runs), at the same generation.
			c.cur.Source, c.cur.Origin, c.cur.Revision, c.cur.Document, c.cur.Doc = ch.Source, ch.Origin, ch.Revision, ch.Document, doc
			out := c.cur
			out.Unchanged = true
			return out, nil
		}
		gen, err := c.srv.Reconfigure(expected, st)
		if err == nil {
			prev := c.cur
			c.cur = Applied{Generation: gen, Source: ch.Source, Origin: ch.Origin, Revision: ch.Revision, Document: ch.Document, Doc: doc, At: c.o.Now()}
			c.count(ch.Source).Applied++
			c.o.Logger.Info("configuration applied", changeAttrs(ch, "generation", gen, "previous", expected, "previous_source", prev.sourceName())...)
			return c.cur, nil
		}
		if ch.Latest && errors.Is(err, kernel.ErrPublicationConflict) && attempt < maxRetries {
			c.count(ch.Source).Retried++
			c.o.Logger.Warn("configuration: another writer published; planning again from the new generation", "source", ch.Source, "origin", ch.Origin, "expected", expected, "current", c.srv.Admission().Generation())
			continue
		}
		return c.cur, c.reject(ch, doc.Explain(err))
	}
}

// Plan is the dry run of Apply: the same checks and errors, and what
// Reconfigure would do, without doing it. A change equal to the
// configuration in force plans no admission change but still shows what
// republishing the same program would reuse.
func (c *Controller) Plan(ch Change) (*server.ReconfigurePlan, error) {
	doc, st, err := c.parse(ch)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	expected := ch.Expected
	if ch.Latest {
		expected = c.srv.Admission().Generation()
	}
	p, err := c.srv.PlanReconfigure(expected, st)
	if err != nil {
		return nil, doc.Explain(err)
	}
	return p, nil
}

// parse parses and converts ch's document.
func (c *Controller) parse(ch Change) (*config.Document, server.Settings, error) {
	name := ch.Name
	if name == "" {
		name = ch.Origin
	}
	doc, err := config.Parse(ch.Document, name)
	if err != nil {
		return nil, server.Settings{}, err
	}
	ss, err := doc.ServerSettings(c.o.Selectors)
	if err != nil {
		return nil, server.Settings{}, err
	}
	return doc, ss.Settings(), nil
}

// reject records and logs a change that changed nothing; c.mu held.
func (c *Controller) reject(ch Change, err error) error {
	c.rejected = &Rejection{Source: ch.Source, Origin: ch.Origin, Revision: ch.Revision, At: c.o.Now(), Err: err}
	c.count(ch.Source).Rejected++
	c.o.Logger.Warn("configuration rejected; the configuration in force is kept", changeAttrs(ch, "generation", c.cur.Generation, "error", err)...)
	return err
}

func (c *Controller) count(s Source) *Counts {
	n := c.counts[s]
	if n == nil {
		n = &Counts{}
		c.counts[s] = n
	}
	return n
}

// String describes a for a log line.
func (a Applied) String() string {
	if a.Document == nil {
		return fmt.Sprintf("generation %d (the server's initial configuration)", a.Generation)
	}
	return fmt.Sprintf("generation %d from %s %s", a.Generation, a.Source, a.Origin)
}

// changeAttrs are the log attributes of ch (its revision only when it has
// one), then more.
func changeAttrs(ch Change, more ...any) []any {
	out := []any{"source", ch.Source, "origin", ch.Origin}
	if ch.Revision != 0 {
		out = append(out, "revision", ch.Revision)
	}
	return append(out, more...)
}

// sourceName is a's source for a log line: "initial" for the
// configuration the server was built with.
func (a Applied) sourceName() string {
	if a.Document == nil && a.Source == "" {
		return "initial"
	}
	return string(a.Source)
}
