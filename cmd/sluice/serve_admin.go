package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/sluicerpc/sluice/control"
	"github.com/sluicerpc/sluice/control/admin"
)

// adminStopTimeout bounds the admin API's graceful shutdown; requests
// still running after it are cut off.
const adminStopTimeout = 5 * time.Second

// startAdmin serves the admin API on cf.AdminAddr with the token of
// cf.AdminTokenFile, loopback only unless cf.AdminRemote. stop shuts it
// down (bounded by adminStopTimeout, then closed) and waits for its
// goroutine.
func startAdmin(ctx context.Context, ctl *control.Controller, cf controlFlags, logger *slog.Logger, stdout io.Writer) (stop func(), err error) {
	tok, err := admin.ReadToken(cf.AdminTokenFile)
	if err != nil {
		return nil, fmt.Errorf("-admin-token-file: %w", err)
	}
	h, err := admin.NewHandler(ctl, admin.Options{Token: tok, Logger: logger})
	if err != nil {
		return nil, err
	}
	l, err := admin.Listen(cf.AdminAddr, cf.AdminRemote)
	if err != nil {
		return nil, fmt.Errorf("-admin: %w", err)
	}
	// One client cannot take every connection of the port (dashboards
	// hold one for /v1/events each).
	l = admin.LimitListener(l, admin.DefaultMaxConns, admin.DefaultMaxConnsPerAddress)
	hs := admin.NewServer(h, logger)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := hs.Serve(l); !errors.Is(err, http.ErrServerClosed) {
			logger.Error("admin API stopped", "error", err)
		}
	}()
	fmt.Fprintf(stdout, "sluice serve: admin API on http://%s\n", l.Addr())
	fmt.Fprintf(stdout, "sluice serve: dashboard at http://%s/ui/ (paste the admin token)\n", l.Addr())
	return func() {
		sctx, cancel := context.WithTimeout(context.Background(), adminStopTimeout)
		defer cancel()
		if err := hs.Shutdown(sctx); err != nil {
			_ = hs.Close()
		}
		<-done
	}, nil
}
