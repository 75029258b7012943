package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/sluicerpc/sluice/control"
	"github.com/sluicerpc/sluice/control/filesource"
)

// hangups returns the channel of the SIGHUPs that make serve read its
// configuration file again, and the function that stops delivering them.
// Tests replace it: they never signal the test process.
var hangups = func() (<-chan os.Signal, func()) {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGHUP)
	return c, func() { signal.Stop(c) }
}

// startFileSource applies the configuration file (its error, an invalid
// document's problems with their lines included, is serve's), then
// watches it and reads it again on every SIGHUP. stop ends both and waits
// for their goroutines.
func startFileSource(ctx context.Context, ctl *control.Controller, path string, logger *slog.Logger) (stop func(), err error) {
	src, err := filesource.Start(ctx, ctl, path, filesource.Options{Logger: logger})
	if err != nil {
		return nil, fmt.Errorf("-config: %w", err) // the flag is named, as for every flag's error
	}
	sigs, stopSigs := hangups()
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-sigs:
				logger.Info("SIGHUP: reading the configuration file again", "path", path)
				src.Reload()
			case <-quit:
				return
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			stopSigs()
			close(quit)
			<-done
			_ = src.Close()
		})
	}, nil
}
