module github.com/sluicerpc/sluice/cmd/sluice-builtins-plugin

go 1.26.0

replace (
	github.com/sluicerpc/sluice/codecs => ../../codecs
	github.com/sluicerpc/sluice/conformance => ../../conformance
	github.com/sluicerpc/sluice/limiters/concurrency => ../../limiters/concurrency
	github.com/sluicerpc/sluice/limiters/tokenbucket => ../../limiters/tokenbucket
	github.com/sluicerpc/sluice/limiters/window => ../../limiters/window
	github.com/sluicerpc/sluice/plugin => ../../plugin
	github.com/sluicerpc/sluice/spi => ../../spi
)

require (
	github.com/sluicerpc/sluice/codecs v0.0.0
	github.com/sluicerpc/sluice/conformance v0.0.0
	github.com/sluicerpc/sluice/limiters/concurrency v0.0.0
	github.com/sluicerpc/sluice/limiters/tokenbucket v0.0.0
	github.com/sluicerpc/sluice/limiters/window v0.0.0
	github.com/sluicerpc/sluice/plugin v0.0.0
	github.com/sluicerpc/sluice/spi v0.0.0
	github.com/stretchr/testify v1.12.1
)

require (
	github.com/andybalholm/brotli v1.3.0 // indirect
	github.com/klauspost/compress v1.20.4 // indirect
)

require (
	github.com/fatih/color v1.13.0 // indirect
	github.com/golang/protobuf v1.5.4 // indirect
	github.com/hashicorp/go-hclog v1.6.3 // indirect
	github.com/hashicorp/go-plugin v1.8.0 // indirect
	github.com/hashicorp/yamux v0.1.2 // indirect
	github.com/mattn/go-colorable v0.1.12 // indirect
	github.com/mattn/go-isatty v0.0.17 // indirect
	github.com/oklog/run v1.1.0 // indirect
	github.com/sluicerpc/sluice/endpointpolicy v0.0.0
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/net v0.60.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
	golang.org/x/text v0.42.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20261110000943-09e21b237f2c // indirect
	google.golang.org/grpc v1.85.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)

replace github.com/sluicerpc/sluice/endpointpolicy => ../../endpointpolicy
