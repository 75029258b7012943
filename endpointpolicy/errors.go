package endpointpolicy

import (
	"errors"
	"fmt"
)

// ErrInvalidOptions matches (with errors.Is) every error returned by an
// options type's Validate, by the constructors and by the live setters.
var ErrInvalidOptions = errors.New("endpointpolicy: invalid options")

// invalid returns an error wrapping ErrInvalidOptions that names the field.
func invalid(field, format string, args ...any) error {
	return fmt.Errorf("%w: %s %s", ErrInvalidOptions, field, fmt.Sprintf(format, args...))
}
