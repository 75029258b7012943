package server

import (
	"errors"
	"fmt"

	"github.com/sluicerpc/sluice/codecs"
	"github.com/sluicerpc/sluice/kernel"
	"github.com/sluicerpc/sluice/kernel/governor"
	"github.com/sluicerpc/sluice/server/internal/conngate"
)

// Settings are every part of a server's configuration that changes while
// it serves, as one complete candidate: zero fields select the defaults,
// as the Options fields of the same names do (a zero Settings is the
// default server with admission disabled).
type Settings struct {
	// Admission is the admission program; nil disables admission.
	Admission    *kernel.Options
	Calls        CallCapacity
	Connections  ConnectionLimits
	Governor     governor.Limits
	Compression  codecs.Config
	StreamWindow int
}

// Reconfigure applies st as one complete candidate derived from the
// admission generation expected, and returns the new generation: the
// generation names the whole configuration, not only its admission part
// (kernel.Publish makes one for every Reconfigure, admission unchanged or
// disabled included).
//
// Every part is validated before anything changes: an invalid part, or an
// admission candidate the kernel rejects, returns the errors of every
// part (each naming its field) and changes nothing; so does a generation
// that moved (a *kernel.PublicationConflictError: another writer
// published; derive the candidate again from what it published). The
// admission publication is the commit point; the other parts are set
// right after it, before Reconfigure returns, each with the semantics of
// its setter (SetCallCapacity, SetConnectionLimits, SetGovernorLimits,
// SetCompression, SetStreamWindow): nothing running is cancelled. A
// request that starts between the publication and the last setter sees
// the new admission with some earlier bounds.
//
// Reconfigure calls are serialized with each other and with the setters
// (the limiter kinds' and selectors' callbacks the kernel runs while it
// prepares the candidate must not call them back).
// Writers that also call the setters or the kernel directly make the
// configuration a mix: a manager that owns the configuration (a file, an
// admin API, etcd) should be its only writer.
func (s *Server) Reconfigure(expected uint64, st Settings) (uint64, error) {
	v, err := s.validateSettings(st)
	if err != nil {
		return s.kernel.Generation(), err
	}
	s.setMu.Lock()
	defer s.setMu.Unlock()
	gen, err := s.kernel.Publish(expected, st.Admission)
	if err != nil {
		return gen, err
	}
	if err := s.gate.SetLimits(v.gate); err != nil {
		panic("server: validated connection limits rejected: " + err.Error())
	}
	if err := s.setCallCapacityLocked(v.calls); err != nil {
		panic("server: the HandshakeAck New encoded does not encode with a validated call capacity: " + err.Error())
	}
	if err := s.governor.SetLimits(st.Governor); err != nil {
		panic("server: validated governor limits rejected: " + err.Error())
	}
	s.comp.Store(v.comp)
	s.streamWindow.Store(int64(v.window))
	return gen, nil
}

// validSettings are Settings validated and resolved.
type validSettings struct {
	gate   conngate.Limits
	calls  CallCapacity
	comp   *compression
	window int
}

// validateSettings checks every part of st but the admission candidate
// (the kernel checks that) and reports every problem.
func (s *Server) validateSettings(st Settings) (validSettings, error) {
	var v validSettings
	var errs []error
	var err error
	if v.gate, err = st.Connections.gateLimits(); err != nil {
		errs = append(errs, err)
	}
	if err := st.Calls.validate(); err != nil {
		errs = append(errs, err)
	}
	v.calls = st.Calls.withDefaults()
	if err := st.Governor.Validate(); err != nil {
		errs = append(errs, fmt.Errorf("server: Governor: %w", err))
	}
	if v.comp, err = s.newCompression(st.Compression); err != nil {
		errs = append(errs, err)
	}
	if v.window, err = resolveStreamWindow(st.StreamWindow); err != nil {
		errs = append(errs, err)
	}
	if st.Admission != nil && len(errs) > 0 {
		// Report the kernel's verdict on the candidate too.
		if _, err := s.kernel.Plan(s.kernel.Generation(), *st.Admission); err != nil && !errors.Is(err, kernel.ErrPublicationConflict) {
			errs = append(errs, err)
		}
	}
	return v, errors.Join(errs...)
}
