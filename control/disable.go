package control

import (
	"errors"

	"github.com/sluicerpc/sluice/kernel"
	"github.com/sluicerpc/sluice/server"
)

// ErrDocumentInForce is returned by DisableAdmission while a document is
// in force: disable admission by applying that document without
// server.admission, so that the document in force stays the whole truth.
var ErrDocumentInForce = errors.New("control: a configuration document is in force: apply it without server.admission")

// DisableAdmission disables admission on a server that runs the
// configuration it was built with (no document applied yet), keeping
// every other setting in force as it is, as one Reconfigure derived from
// generation expected (a *kernel.PublicationConflictError when it moved,
// and nothing changes). Admission already disabled at expected:
// Applied.Unchanged. The configuration in force still has no document.
func (c *Controller) DisableAdmission(source Source, origin string, expected uint64) (Applied, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := Change{Source: source, Origin: origin, Expected: expected}
	if c.cur.Document != nil {
		return c.cur, c.reject(ch, ErrDocumentInForce)
	}
	if cur := c.srv.Admission().Generation(); cur != expected {
		return c.cur, c.reject(ch, &kernel.PublicationConflictError{Expected: expected, Current: cur})
	}
	if !c.srv.Admission().Enabled() {
		c.count(source).Unchanged++
		out := c.cur
		out.Generation, out.Unchanged = expected, true
		return out, nil
	}
	st := server.Settings{Calls: c.srv.CallCapacity(), Connections: c.srv.ConnectionLimits(), Governor: c.srv.GovernorLimits(),
		Compression: c.srv.Compression(), StreamWindow: c.srv.StreamWindow()}
	gen, err := c.srv.Reconfigure(expected, st)
	if err != nil {
		return c.cur, c.reject(ch, err)
	}
	c.cur = Applied{Generation: gen, Source: source, Origin: origin, At: c.o.Now()}
	c.count(source).Applied++
	c.o.Logger.Info("admission disabled", "source", source, "origin", origin, "generation", gen, "previous", expected)
	return c.cur, nil
}
