package spi_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/sluicerpc/sluice/spi"
)

func TestHintString(t *testing.T) {
	tests := []struct {
		hint spi.Hint
		want string
	}{
		{spi.HintNone, "none"},
		{spi.HintOnRelease, "on-release"},
		{spi.HintAt, "at"},
		{spi.HintNever, "never"},
		{spi.Hint(4), "hint(?)"},
		{spi.Hint(255), "hint(?)"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.hint.String())
			assert.Equal(t, tt.want, fmt.Sprint(tt.hint), "Hint is a fmt.Stringer")
		})
	}
	assert.Equal(t, spi.HintNone, spi.Hint(0), "the zero Hint is HintNone")
}

func TestClassString(t *testing.T) {
	tests := []struct {
		class spi.Class
		want  string
	}{
		{spi.ClassConcurrency, "concurrency"},
		{spi.ClassRate, "rate"},
		{spi.Class(0), "class(?)"},
		{spi.Class(3), "class(?)"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.class.String())
		})
	}
	assert.NotEqual(t, spi.Class(0), spi.ClassConcurrency, "the zero Class is not a valid class")
}

func TestDecisionConstructors(t *testing.T) {
	at := time.Date(2030, 1, 2, 3, 4, 5, 6, time.UTC)

	tests := []struct {
		name string
		got  spi.Decision
		want spi.Decision
	}{
		{"Grant", spi.Grant(), spi.Decision{Granted: true, Hint: spi.HintNone}},
		{"RefuseUntilRelease", spi.RefuseUntilRelease(), spi.Decision{Granted: false, Hint: spi.HintOnRelease}},
		{"RefuseUntil", spi.RefuseUntil(at), spi.Decision{Granted: false, Hint: spi.HintAt, RetryAt: at}},
		{"RefuseNever", spi.RefuseNever(), spi.Decision{Granted: false, Hint: spi.HintNever}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.got)
			if tt.got.Hint != spi.HintAt {
				assert.True(t, tt.got.RetryAt.IsZero(), "RetryAt is set only with HintAt")
			}
			assert.Equal(t, tt.got.Granted, tt.got.Hint == spi.HintNone, "a grant carries HintNone, a refusal never does")
		})
	}

	// RefuseUntil keeps the instant exactly, monotonic reading included.
	now := time.Now()
	d := spi.RefuseUntil(now)
	assert.True(t, d.RetryAt.Equal(now))
	assert.Equal(t, now, d.RetryAt)
}

var decisionSink spi.Decision

func TestDecisionConstructorsAllocateNothing(t *testing.T) {
	at := time.Unix(1, 0)
	allocs := testing.AllocsPerRun(100, func() {
		decisionSink = spi.Grant()
		decisionSink = spi.RefuseUntilRelease()
		decisionSink = spi.RefuseUntil(at)
		decisionSink = spi.RefuseNever()
	})
	assert.Zero(t, allocs)
}

func TestParamErrorMessages(t *testing.T) {
	tests := []struct {
		name string
		err  *spi.ParamError
		want string
	}{
		{"named param", &spi.ParamError{Param: "limit", Reason: "required"}, "limit: required"},
		{"whole set", &spi.ParamError{Reason: "rate and period must both be set"}, "rate and period must both be set"},
		{"qualified name", &spi.ParamError{Param: "example.com/x", Reason: "bad"}, "example.com/x: bad"},
		{"empty", &spi.ParamError{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tt.err.Error())
		})
	}
}

func TestInvalidParam(t *testing.T) {
	err := spi.InvalidParam("limit", "must be between %d and %d, got %d", 1, 10, 0)
	require.EqualError(t, err, "limit: must be between 1 and 10, got 0")

	var pe *spi.ParamError
	require.ErrorAs(t, err, &pe)
	assert.Equal(t, "limit", pe.Param)
	assert.Equal(t, "must be between 1 and 10, got 0", pe.Reason)

	// It survives wrapping.
	wrapped := fmt.Errorf("rule %q: %w", "global", err)
	var pe2 *spi.ParamError
	require.ErrorAs(t, wrapped, &pe2)
	assert.Same(t, pe, pe2)

	// Without arguments the format is used verbatim.
	assert.EqualError(t, spi.InvalidParam("rate", "required"), "rate: required")

	// An empty param name renders the reason alone.
	assert.EqualError(t, spi.InvalidParam("", "no parameters given"), "no parameters given")
}

func TestSentinelErrors(t *testing.T) {
	require.Error(t, spi.ErrUnknownKind)
	require.Error(t, spi.ErrDuplicateKind)
	assert.NotErrorIs(t, spi.ErrUnknownKind, spi.ErrDuplicateKind)
	assert.NotErrorIs(t, spi.ErrDuplicateKind, spi.ErrUnknownKind)
	assert.Equal(t, "spi: unknown limiter kind", spi.ErrUnknownKind.Error())
	assert.Equal(t, "spi: limiter kind already registered", spi.ErrDuplicateKind.Error())
	assert.False(t, errors.Is(&spi.ParamError{Param: "x"}, spi.ErrUnknownKind))
}

func TestSystemClock(t *testing.T) {
	var c spi.Clock = spi.SystemClock{}
	before := time.Now()
	got := c.Now()
	after := time.Now()
	assert.False(t, got.Before(before))
	assert.False(t, got.After(after))
}
