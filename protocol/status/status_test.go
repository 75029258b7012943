package status_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sluicerpc/sluice/protocol"
	"github.com/sluicerpc/sluice/protocol/status"
)

func TestError(t *testing.T) {
	e := status.Errorf(protocol.CodeNotFound, "no user %d", 7)
	assert.Equal(t, "sluice: NotFound: no user 7", e.Error())
	e = &status.Error{Code: protocol.CodeResourceExhausted, Message: "busy", Reason: "queue_full"}
	assert.Equal(t, "sluice: ResourceExhausted (queue_full): busy", e.Error())
	wrapped := fmt.Errorf("calling: %w", e)
	got, ok := status.FromError(wrapped)
	assert.True(t, ok)
	assert.Same(t, e, got)
	assert.True(t, errors.Is(wrapped, status.New(protocol.CodeResourceExhausted, "")))
	assert.False(t, errors.Is(wrapped, status.New(protocol.CodeUnavailable, "")))
}

func TestCode(t *testing.T) {
	assert.Equal(t, protocol.CodeOK, status.Code(nil))
	assert.Equal(t, protocol.CodeCanceled, status.Code(fmt.Errorf("x: %w", context.Canceled)))
	assert.Equal(t, protocol.CodeDeadlineExceeded, status.Code(context.DeadlineExceeded))
	assert.Equal(t, protocol.CodeInternal, status.Code(status.New(protocol.CodeInternal, "boom")))
	assert.Equal(t, protocol.CodeUnknown, status.Code(errors.New("plain")))
	_, ok := status.FromError(errors.New("plain"))
	assert.False(t, ok)
}
