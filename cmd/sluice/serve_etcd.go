package main

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"

	"github.com/sluicerpc/sluice/control"
	"github.com/sluicerpc/sluice/etcdsource"
)

// etcdReconnect is the etcd client's reconnect backoff: gRPC's default
// starts at 1s and grows to 2 minutes, so a server would come back to an
// etcd restarted a minute ago only a minute later, and the fleet would
// converge on the next revision that much later. Dialing a loopback or
// LAN etcd every half second at most costs little.
var etcdReconnect = grpc.ConnectParams{
	Backoff:           backoff.Config{BaseDelay: 25 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 500 * time.Millisecond},
	MinConnectTimeout: time.Second,
}

// startEtcdSource applies the document at cf.EtcdKey and each revision of
// it. It waits up to cf.EtcdTimeout for the first read: when etcd does not
// answer within it, serve starts with the configuration it has (the
// file's, or its flags') after a warning, and the source keeps trying in
// the background; the first answer is then applied as usual.
func startEtcdSource(ctx context.Context, ctl *control.Controller, cf controlFlags, logger *slog.Logger) (stop func(), err error) {
	var endpoints []string
	for _, e := range strings.Split(cf.EtcdEndpoints, ",") {
		if e = strings.TrimSpace(e); e != "" {
			endpoints = append(endpoints, e)
		}
	}
	if len(endpoints) == 0 {
		return nil, fmt.Errorf("-etcd-endpoints: no endpoint in %q", cf.EtcdEndpoints)
	}
	// No DialTimeout: New does not wait for a connection, the source's
	// reads do (each bounded by cf.EtcdTimeout).
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   endpoints,
		Logger:      zap.NewNop(),
		DialOptions: []grpc.DialOption{grpc.WithConnectParams(etcdReconnect)},
	})
	if err != nil {
		return nil, fmt.Errorf("-etcd-endpoints: %w", err)
	}
	src, err := etcdsource.Start(ctx, ctl, etcdsource.Options{Client: cli, Key: cf.EtcdKey, Timeout: cf.EtcdTimeout, Logger: logger})
	if err != nil {
		_ = cli.Close()
		return nil, err
	}
	stop = func() {
		src.Stop()
		_ = cli.Close()
	}
	timer := time.NewTimer(cf.EtcdTimeout)
	defer timer.Stop()
	select {
	case <-src.Ready():
	case <-timer.C:
		logger.Warn("etcd: no answer within -etcd-timeout; serving the configuration in force, and reading the key in the background",
			"endpoints", strings.Join(endpoints, ","), "key", cf.EtcdKey, "etcd_timeout", cf.EtcdTimeout, "in_force", ctl.Current().String(),
			"last_error", src.Status().LastError)
	case <-ctx.Done():
	}
	return stop, nil
}
