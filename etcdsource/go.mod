module github.com/sluicerpc/sluice/etcdsource

go 1.26.0

require (
	github.com/sluicerpc/sluice/config v0.0.0
	github.com/sluicerpc/sluice/control v0.0.0
	github.com/sluicerpc/sluice/etcdtest v0.0.0
	github.com/sluicerpc/sluice/server v0.0.0
	github.com/stretchr/testify v1.12.1
	go.etcd.io/etcd/api/v3 v3.7.3
	go.etcd.io/etcd/client/v3 v3.7.3
	go.uber.org/goleak v1.3.0
)

require (
	github.com/andybalholm/brotli v1.3.0 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/coreos/go-semver v0.3.1 // indirect
	github.com/coreos/go-systemd/v22 v22.7.0 // indirect
	github.com/golang/protobuf v1.5.4 // indirect
	github.com/grpc-ecosystem/grpc-gateway/v2 v2.29.0 // indirect
	github.com/klauspost/compress v1.20.4 // indirect
	github.com/sluicerpc/sluice/codecs v0.0.0 // indirect
	github.com/sluicerpc/sluice/endpointpolicy v0.0.0 // indirect
	github.com/sluicerpc/sluice/kernel v0.0.0 // indirect
	github.com/sluicerpc/sluice/limiters/concurrency v0.0.0 // indirect
	github.com/sluicerpc/sluice/limiters/tokenbucket v0.0.0 // indirect
	github.com/sluicerpc/sluice/limiters/window v0.0.0 // indirect
	github.com/sluicerpc/sluice/message v0.0.0 // indirect
	github.com/sluicerpc/sluice/protocol v0.0.0 // indirect
	github.com/sluicerpc/sluice/spi v0.0.0 // indirect
	go.etcd.io/etcd/client/pkg/v3 v3.7.3 // indirect
	go.opentelemetry.io/otel v1.47.0 // indirect
	go.opentelemetry.io/otel/metric v1.47.0 // indirect
	go.uber.org/multierr v1.11.0 // indirect
	go.uber.org/zap v1.27.1 // indirect
	go.yaml.in/yaml/v3 v3.0.6 // indirect
	golang.org/x/net v0.61.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/text v0.43.0 // indirect
	google.golang.org/genproto/googleapis/api v0.0.0-20260803160001-6ac0973c030d // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260803160001-6ac0973c030d // indirect
	google.golang.org/grpc v1.83.2 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)

replace (
	github.com/sluicerpc/sluice/codecs => ../codecs
	github.com/sluicerpc/sluice/config => ../config
	github.com/sluicerpc/sluice/conformance => ../conformance
	github.com/sluicerpc/sluice/control => ../control
	github.com/sluicerpc/sluice/endpointpolicy => ../endpointpolicy
	github.com/sluicerpc/sluice/etcdtest => ../etcdtest
	github.com/sluicerpc/sluice/kernel => ../kernel
	github.com/sluicerpc/sluice/limiters/concurrency => ../limiters/concurrency
	github.com/sluicerpc/sluice/limiters/tokenbucket => ../limiters/tokenbucket
	github.com/sluicerpc/sluice/limiters/window => ../limiters/window
	github.com/sluicerpc/sluice/message => ../message
	github.com/sluicerpc/sluice/protocol => ../protocol
	github.com/sluicerpc/sluice/server => ../server
	github.com/sluicerpc/sluice/spi => ../spi
)
