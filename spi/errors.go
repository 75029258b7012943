package spi

import (
	"errors"
	"fmt"
)

// ErrUnknownKind is returned (wrapped) when a Spec names a kind that is not
// registered.
var ErrUnknownKind = errors.New("spi: unknown limiter kind")

// ErrDuplicateKind is returned when a kind name is registered twice.
var ErrDuplicateKind = errors.New("spi: limiter kind already registered")

// ParamError reports one invalid parameter.
type ParamError struct {
	// Param is the parameter's name; empty when the problem concerns the
	// parameter set as a whole.
	Param string
	// Reason says what is wrong, in words that can follow the name.
	Reason string
}

func (e *ParamError) Error() string {
	if e.Param == "" {
		return e.Reason
	}
	return fmt.Sprintf("%s: %s", e.Param, e.Reason)
}

// InvalidParam returns a *ParamError for param.
func InvalidParam(param, format string, args ...any) error {
	return &ParamError{Param: param, Reason: fmt.Sprintf(format, args...)}
}
