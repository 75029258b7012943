package kernel

import (
	"errors"
	"fmt"
	"strings"
)

// Lifecycle results. Enable, Update and Disable return nil on success or an
// error that matches exactly one of these with errors.Is.
var (
	// ErrLifecycleClosed: the kernel is sealed; nothing is published
	// after Seal.
	ErrLifecycleClosed = errors.New("kernel: admission lifecycle is closed")
	// ErrModeConflict: the operation does not apply to the current mode
	// (Enable while enabled, Update while disabled).
	ErrModeConflict = errors.New("kernel: admission mode conflict")
	// ErrPublicationConflict: the candidate was derived from a generation
	// that is no longer current. Errors that match it are
	// *PublicationConflictError.
	ErrPublicationConflict = errors.New("kernel: publication conflict")
	// ErrCandidateRejected: the candidate is invalid or asks for a
	// transition the kernel cannot make safely. Errors that match it are
	// *CandidateError.
	ErrCandidateRejected = errors.New("kernel: candidate rejected")
)

// ErrUnknownMethod is returned by Admit for a MethodID outside the catalog.
var ErrUnknownMethod = errors.New("kernel: method id is not in the catalog")

// PublicationConflictError reports the generation an Update expected and the
// one it found.
type PublicationConflictError struct {
	Expected, Current uint64
}

func (e *PublicationConflictError) Error() string {
	return fmt.Sprintf("kernel: publication conflict: candidate derived from generation %d, current is %d", e.Expected, e.Current)
}

// Is matches ErrPublicationConflict.
func (e *PublicationConflictError) Is(target error) bool { return target == ErrPublicationConflict }

// Problem is one reason a candidate was rejected.
type Problem struct {
	// Field names the offending part of Options, for example
	// `Methods["echo/Say"].Limits[0].limit` or `Queue.MaxQueueDelay`.
	Field string
	// Reason says what is wrong.
	Reason string
}

func (p Problem) String() string { return p.Field + ": " + p.Reason }

// CandidateError lists every problem found in a rejected candidate, sorted
// by field.
type CandidateError struct {
	Problems []Problem
}

func (e *CandidateError) Error() string {
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.String()
	}
	return "kernel: candidate rejected: " + strings.Join(parts, "; ")
}

// Is matches ErrCandidateRejected.
func (e *CandidateError) Is(target error) bool { return target == ErrCandidateRejected }

// Outcome classifies the result of a lifecycle call.
type Outcome uint8

const (
	Succeeded Outcome = iota
	LifecycleClosed
	ModeConflict
	PublicationConflict
	CandidateRejected
	// Failed is any other error (none is expected).
	Failed
)

var outcomeNames = [...]string{"succeeded", "lifecycle_closed", "mode_conflict", "publication_conflict", "candidate_rejected", "failed"}

func (o Outcome) String() string {
	if int(o) < len(outcomeNames) {
		return outcomeNames[o]
	}
	return "outcome(?)"
}

// OutcomeOf classifies err as returned by Enable, Update or Disable.
func OutcomeOf(err error) Outcome {
	switch {
	case err == nil:
		return Succeeded
	case errors.Is(err, ErrLifecycleClosed):
		return LifecycleClosed
	case errors.Is(err, ErrModeConflict):
		return ModeConflict
	case errors.Is(err, ErrPublicationConflict):
		return PublicationConflict
	case errors.Is(err, ErrCandidateRejected):
		return CandidateRejected
	}
	return Failed
}
