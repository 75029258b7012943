package spi_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/sluicerpc/sluice/spi"
)

func TestOutcomeKindNames(t *testing.T) {
	for k, want := range map[spi.OutcomeKind]string{
		spi.OutcomeSuccess: "success", spi.OutcomeRemoteError: "remote_error", spi.OutcomeSendFailure: "send_failure",
		spi.OutcomeConnectionClosed: "connection_closed", spi.OutcomeGoAway: "goaway",
		spi.OutcomeCancelled: "cancelled", spi.OutcomeDeadlineExceeded: "deadline_exceeded",
	} {
		assert.Equal(t, want, k.String())
		assert.True(t, k.Valid())
	}
	assert.False(t, spi.OutcomeKind(0).Valid())
	assert.Equal(t, "OutcomeKind(?)", spi.OutcomeKind(99).String())
}
