package main

import (
	"context"
	"io"
	"log/slog"

	"github.com/sluicerpc/sluice/control"
)

// startAdmin serves the admin API on cf.AdminAddr.
func startAdmin(ctx context.Context, ctl *control.Controller, cf controlFlags, logger *slog.Logger, stdout io.Writer) (stop func(), err error) {
	return nil, errNotBuilt
}
