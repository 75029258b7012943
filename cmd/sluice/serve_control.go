package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"log/slog"
	"time"

	"github.com/sluicerpc/sluice/config"
	"github.com/sluicerpc/sluice/control"
	"github.com/sluicerpc/sluice/kernel"
	"github.com/sluicerpc/sluice/server"
	"go.opentelemetry.io/otel/metric"
)

// controlFlags are the flags of "sluice serve" that manage its runtime
// configuration: a file, the admin API, etcd. Each is off unless given.
type controlFlags struct {
	ConfigFile     string
	AdminAddr      string
	AdminTokenFile string
	AdminRemote    bool
	EtcdEndpoints  string
	EtcdKey        string
	EtcdTimeout    time.Duration
	Metrics        metricsFlags
}

func (cf *controlFlags) define(fs *flag.FlagSet) {
	fs.StringVar(&cf.ConfigFile, "config", "", "configuration document (YAML or JSON; docs/operations.md): applied before serving, then again whenever the file changes (replaced or symlink-swapped included) and on SIGHUP; an invalid change keeps the configuration in force")
	fs.StringVar(&cf.AdminAddr, "admin", "", "serve the admin HTTP API on this address, a loopback one unless -admin-allow-remote (off by default; docs/operations.md); requires -admin-token-file")
	fs.StringVar(&cf.AdminTokenFile, "admin-token-file", "", "file holding the admin API's bearer token (its first line; at least 16 bytes)")
	fs.BoolVar(&cf.AdminRemote, "admin-allow-remote", false, "let -admin listen on an address that is not loopback (put TLS in front of it: the token travels in clear)")
	fs.StringVar(&cf.EtcdEndpoints, "etcd-endpoints", "", "comma-separated etcd endpoints: apply the configuration document stored at -etcd-key and every revision of it")
	fs.StringVar(&cf.EtcdKey, "etcd-key", "", "the etcd key of the configuration document; requires -etcd-endpoints")
	fs.DurationVar(&cf.EtcdTimeout, "etcd-timeout", 5*time.Second, "bound of each etcd request (dial, read); positive")
	cf.Metrics.define(fs)
}

// any reports whether a source of configuration is given.
func (cf controlFlags) any() bool {
	return cf.ConfigFile != "" || cf.AdminAddr != "" || cf.EtcdKey != ""
}

// serveSelectors are the partition selectors the echo program offers to
// configuration documents: "identity" partitions by the connection's
// authenticated identity, "tenant" by the request's "tenant" metadata
// (no value: the default partition).
func serveSelectors() config.Selectors {
	return config.Selectors{
		"identity": {Name: "identity", Version: 1, Key: func(f kernel.Facts) (string, bool) { return f.Identity, f.Identity != "" }},
		"tenant": {Name: "tenant", Version: 1, Key: func(f kernel.Facts) (string, bool) {
			if f.Metadata == nil {
				return "", false
			}
			return f.Metadata.Get("tenant")
		}},
	}
}

// controlPlane is what runs beside the server to manage its
// configuration: the Controller and the sources feeding it.
type controlPlane struct {
	ctl   *control.Controller
	stops []func() // of the started sources, in reverse order of start
}

// startControl makes the Controller of srv and starts the sources cf
// names. The configuration file, when given, is applied before it returns
// (an invalid one is an error: the server must not start without it);
// etcd is read in the background (until it answers the server runs the
// file's configuration, or its flags'). Stop with stop, which waits for
// every goroutine the sources started.
func startControl(ctx context.Context, srv *server.Server, cf controlFlags, mp metric.MeterProvider, logger *slog.Logger, stdout io.Writer) (*controlPlane, error) {
	cp := &controlPlane{ctl: control.New(srv, control.Options{Selectors: serveSelectors(), Logger: logger, MeterProvider: mp})}
	start := func(stop func(), err error) error {
		if err != nil {
			cp.stop()
			return err
		}
		cp.stops = append(cp.stops, stop)
		return nil
	}
	if cf.ConfigFile != "" {
		if err := start(startFileSource(ctx, cp.ctl, cf.ConfigFile, logger)); err != nil {
			return nil, err
		}
	}
	if cf.EtcdKey != "" {
		if err := start(startEtcdSource(ctx, cp.ctl, cf, logger)); err != nil {
			return nil, err
		}
	}
	if cf.AdminAddr != "" {
		if err := start(startAdmin(ctx, cp.ctl, cf, logger, stdout)); err != nil {
			return nil, err
		}
	}
	return cp, nil
}

// stop stops every source and waits for their goroutines.
func (cp *controlPlane) stop() {
	for i := len(cp.stops) - 1; i >= 0; i-- {
		cp.stops[i]()
	}
	cp.stops = nil
	cp.ctl.Close()
}

var errNotBuilt = errors.New("not built yet")
