module github.com/sluicerpc/sluice/cmd/sluice

go 1.26.0

require (
	github.com/hashicorp/go-hclog v1.6.3
	github.com/prometheus/client_golang v1.25.0
	github.com/prometheus/client_model v0.6.3
	github.com/prometheus/common v0.73.1
	github.com/sluicerpc/sluice/codecs v0.0.0
	github.com/sluicerpc/sluice/etcdtest v0.0.0
	github.com/sluicerpc/sluice/kernel v0.0.0
	github.com/sluicerpc/sluice/limiters/concurrency v0.0.0
	github.com/sluicerpc/sluice/limiters/tokenbucket v0.0.0
	github.com/sluicerpc/sluice/spi v0.0.0
	github.com/stretchr/testify v1.12.1
	go.opentelemetry.io/otel/exporters/prometheus v0.69.0
	go.opentelemetry.io/otel/metric v1.47.0
	go.opentelemetry.io/otel/sdk/metric v1.47.0
	go.uber.org/goleak v1.3.0
	go.uber.org/zap v1.27.1
	google.golang.org/grpc v1.85.0
)

require (
	github.com/andybalholm/brotli v1.3.0 // indirect
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/coreos/go-semver v0.3.1 // indirect
	github.com/coreos/go-systemd/v22 v22.7.0 // indirect
	github.com/fatih/color v1.13.0 // indirect
	github.com/fsnotify/fsnotify v1.10.1 // indirect
	github.com/go-logr/logr v1.4.4 // indirect
	github.com/go-logr/stdr v1.2.2 // indirect
	github.com/golang/protobuf v1.5.4 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/grpc-ecosystem/grpc-gateway/v2 v2.29.0 // indirect
	github.com/hashicorp/go-plugin v1.8.0 // indirect
	github.com/hashicorp/yamux v0.1.2 // indirect
	github.com/klauspost/compress v1.20.4 // indirect
	github.com/mattn/go-colorable v0.1.12 // indirect
	github.com/mattn/go-isatty v0.0.17 // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/oklog/run v1.1.0 // indirect
	github.com/pandatix/go-abnf v0.5.3 // indirect
	github.com/prometheus/otlptranslator v1.0.0 // indirect
	github.com/prometheus/procfs v0.22.0 // indirect
	github.com/sluicerpc/sluice/limiters/window v0.0.0 // indirect
	github.com/sluicerpc/sluice/message v0.0.0 // indirect
	go.etcd.io/etcd/api/v3 v3.7.3 // indirect
	go.etcd.io/etcd/client/pkg/v3 v3.7.3 // indirect
	go.opentelemetry.io/auto/sdk v1.2.1 // indirect
	go.opentelemetry.io/otel v1.47.0 // indirect
	go.opentelemetry.io/otel/log v1.47.0 // indirect
	go.opentelemetry.io/otel/sdk v1.47.0 // indirect
	go.opentelemetry.io/otel/trace v1.47.0 // indirect
	go.uber.org/multierr v1.11.0 // indirect
	golang.org/x/net v0.61.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/text v0.43.0 // indirect
	google.golang.org/genproto/googleapis/api v0.0.0-20260817212433-ac3dfec99bb1 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20261110000943-09e21b237f2c // indirect
	google.golang.org/protobuf v1.36.12 // indirect
	pgregory.net/rapid v1.3.0 // indirect
)

require (
	github.com/sluicerpc/sluice/client v0.0.0
	github.com/sluicerpc/sluice/config v0.0.0
	github.com/sluicerpc/sluice/conformance v0.0.0
	github.com/sluicerpc/sluice/control v0.0.0
	github.com/sluicerpc/sluice/endpointpolicy v0.0.0 // indirect
	github.com/sluicerpc/sluice/etcdsource v0.0.0
	github.com/sluicerpc/sluice/plugin v0.0.0
	github.com/sluicerpc/sluice/protocol v0.0.0
	github.com/sluicerpc/sluice/server v0.0.0
	go.etcd.io/etcd/client/v3 v3.7.3
	go.yaml.in/yaml/v3 v3.0.6 // indirect
)

replace (
	github.com/sluicerpc/sluice/kernel => ../../kernel
	github.com/sluicerpc/sluice/limiters/concurrency => ../../limiters/concurrency
	github.com/sluicerpc/sluice/limiters/tokenbucket => ../../limiters/tokenbucket
	github.com/sluicerpc/sluice/limiters/window => ../../limiters/window
	github.com/sluicerpc/sluice/spi => ../../spi
)

replace github.com/sluicerpc/sluice/plugin => ../../plugin

replace github.com/sluicerpc/sluice/conformance => ../../conformance

replace github.com/sluicerpc/sluice/server => ../../server

replace github.com/sluicerpc/sluice/protocol => ../../protocol

replace github.com/sluicerpc/sluice/message => ../../message

replace github.com/sluicerpc/sluice/client => ../../client

replace github.com/sluicerpc/sluice/endpointpolicy => ../../endpointpolicy

replace github.com/sluicerpc/sluice/codecs => ../../codecs

replace github.com/sluicerpc/sluice/config => ../../config

replace github.com/sluicerpc/sluice/control => ../../control

replace github.com/sluicerpc/sluice/etcdsource => ../../etcdsource

replace github.com/sluicerpc/sluice/etcdtest => ../../etcdtest
