module github.com/sluicerpc/sluice/client

go 1.26.0

require (
	github.com/sluicerpc/sluice/codecs v0.0.0
	github.com/sluicerpc/sluice/kernel v0.0.0
	github.com/sluicerpc/sluice/limiters/concurrency v0.0.0
	github.com/sluicerpc/sluice/limiters/tokenbucket v0.0.0
	github.com/sluicerpc/sluice/message v0.0.0
	github.com/sluicerpc/sluice/protocol v0.0.0
	github.com/sluicerpc/sluice/server v0.0.0
	github.com/sluicerpc/sluice/spi v0.0.0
	github.com/stretchr/testify v1.12.1
	go.opentelemetry.io/otel v1.47.0
	go.opentelemetry.io/otel/metric v1.47.0
	go.opentelemetry.io/otel/sdk/metric v1.47.0
	go.uber.org/goleak v1.3.0
	pgregory.net/rapid v1.3.0
)

require (
	github.com/go-logr/logr v1.4.4 // indirect
	github.com/go-logr/stdr v1.2.2 // indirect
	github.com/google/uuid v1.6.0 // indirect
	go.opentelemetry.io/auto/sdk v1.2.1 // indirect
	go.opentelemetry.io/otel/log v1.47.0 // indirect
	go.opentelemetry.io/otel/sdk v1.47.0 // indirect
	go.opentelemetry.io/otel/trace v1.47.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
)

require (
	github.com/andybalholm/brotli v1.3.0 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/klauspost/compress v1.20.4 // indirect
)

require (
	github.com/sluicerpc/sluice/endpointpolicy v0.0.0
	go.yaml.in/yaml/v3 v3.0.5 // indirect
)

replace (
	github.com/sluicerpc/sluice/codecs => ../codecs
	github.com/sluicerpc/sluice/conformance => ../conformance
	github.com/sluicerpc/sluice/kernel => ../kernel
	github.com/sluicerpc/sluice/limiters/concurrency => ../limiters/concurrency
	github.com/sluicerpc/sluice/limiters/tokenbucket => ../limiters/tokenbucket
	github.com/sluicerpc/sluice/limiters/window => ../limiters/window
	github.com/sluicerpc/sluice/message => ../message
	github.com/sluicerpc/sluice/protocol => ../protocol
	github.com/sluicerpc/sluice/server => ../server
	github.com/sluicerpc/sluice/spi => ../spi
)

replace github.com/sluicerpc/sluice/endpointpolicy => ../endpointpolicy
