package main

import (
	"context"
	"log/slog"

	"github.com/sluicerpc/sluice/control"
)

// startEtcdSource applies the document at cf.EtcdKey and each revision of it.
func startEtcdSource(ctx context.Context, ctl *control.Controller, cf controlFlags, logger *slog.Logger) (stop func(), err error) {
	return nil, errNotBuilt
}
