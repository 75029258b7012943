module github.com/sluicerpc/sluice/bench

go 1.26.0

require (
	github.com/alibaba/sentinel-golang v1.0.4
	github.com/failsafe-go/failsafe-go v0.9.8
	github.com/sluicerpc/sluice/codecs v0.0.0
	github.com/sluicerpc/sluice/kernel v0.0.0
	github.com/sluicerpc/sluice/limiters/concurrency v0.0.0
	github.com/sluicerpc/sluice/limiters/tokenbucket v0.0.0
	github.com/sluicerpc/sluice/limiters/window v0.0.0
	github.com/sluicerpc/sluice/spi v0.0.0
	github.com/stretchr/testify v1.12.1
	go.uber.org/goleak v1.3.0
	golang.org/x/sync v0.23.0
	golang.org/x/time v0.15.0
)

require (
	github.com/sluicerpc/sluice/endpointpolicy v0.0.0 // indirect
	go.opentelemetry.io/otel v1.47.0 // indirect
	go.opentelemetry.io/otel/metric v1.47.0 // indirect
)

require (
	github.com/sluicerpc/sluice/message v0.0.0 // indirect
	github.com/sluicerpc/sluice/protocol v0.0.0
)

require (
	github.com/StackExchange/wmi v0.0.0-20190523213315-cbe66965904d // indirect
	github.com/andybalholm/brotli v1.3.0 // indirect
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/bits-and-blooms/bitset v1.24.4 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/go-ole/go-ole v1.2.4 // indirect
	github.com/golang/protobuf v1.5.4 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/klauspost/compress v1.20.4 // indirect
	github.com/matttproud/golang_protobuf_extensions v1.0.1 // indirect
	github.com/pkg/errors v0.9.1 // indirect
	github.com/prometheus/client_golang v1.9.0 // indirect
	github.com/prometheus/client_model v0.2.0 // indirect
	github.com/prometheus/common v0.15.0 // indirect
	github.com/prometheus/procfs v0.2.0 // indirect
	github.com/shirou/gopsutil/v3 v3.21.6 // indirect
	github.com/sluicerpc/sluice/client v0.0.0
	github.com/sluicerpc/sluice/server v0.0.0
	github.com/tklauser/go-sysconf v0.3.6 // indirect
	github.com/tklauser/numcpus v0.2.2 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/net v0.60.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
	golang.org/x/text v0.42.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260817212433-ac3dfec99bb1 // indirect
	google.golang.org/grpc v1.85.0
	google.golang.org/protobuf v1.36.12 // indirect
	gopkg.in/yaml.v2 v2.3.0 // indirect
)

replace (
	github.com/sluicerpc/sluice/kernel => ../kernel
	github.com/sluicerpc/sluice/limiters/concurrency => ../limiters/concurrency
	github.com/sluicerpc/sluice/limiters/tokenbucket => ../limiters/tokenbucket
	github.com/sluicerpc/sluice/limiters/window => ../limiters/window
	github.com/sluicerpc/sluice/spi => ../spi
)

replace github.com/sluicerpc/sluice/conformance => ../conformance

replace github.com/sluicerpc/sluice/server => ../server

replace github.com/sluicerpc/sluice/client => ../client

replace github.com/sluicerpc/sluice/protocol => ../protocol

replace github.com/sluicerpc/sluice/message => ../message

replace github.com/sluicerpc/sluice/codecs => ../codecs

replace github.com/sluicerpc/sluice/endpointpolicy => ../endpointpolicy
