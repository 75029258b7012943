package main

import (
	"context"
	"log/slog"

	"github.com/sluicerpc/sluice/control"
)

// startFileSource applies the configuration file, then watches it.
func startFileSource(ctx context.Context, ctl *control.Controller, path string, logger *slog.Logger) (stop func(), err error) {
	return nil, errNotBuilt
}
