module github.com/sluicerpc/sluice/server

go 1.26.0

require (
	github.com/stretchr/testify v1.12.1
	go.uber.org/goleak v1.3.0
	google.golang.org/protobuf v1.36.12
	pgregory.net/rapid v1.3.0
)

require (
	github.com/andybalholm/brotli v1.3.0 // indirect
	github.com/klauspost/compress v1.20.4 // indirect
)

require (
	github.com/sluicerpc/sluice/codecs v0.0.0
	github.com/sluicerpc/sluice/kernel v0.0.0
	github.com/sluicerpc/sluice/limiters/concurrency v0.0.0
	github.com/sluicerpc/sluice/limiters/tokenbucket v0.0.0
	github.com/sluicerpc/sluice/message v0.0.0
	github.com/sluicerpc/sluice/protocol v0.0.0
	github.com/sluicerpc/sluice/spi v0.0.0
	go.yaml.in/yaml/v3 v3.0.5 // indirect
)

replace github.com/sluicerpc/sluice/kernel => ../kernel

replace github.com/sluicerpc/sluice/protocol => ../protocol

replace github.com/sluicerpc/sluice/message => ../message

replace github.com/sluicerpc/sluice/spi => ../spi

replace github.com/sluicerpc/sluice/limiters/concurrency => ../limiters/concurrency

replace github.com/sluicerpc/sluice/limiters/tokenbucket => ../limiters/tokenbucket

replace github.com/sluicerpc/sluice/conformance => ../conformance

replace github.com/sluicerpc/sluice/limiters/window => ../limiters/window

replace github.com/sluicerpc/sluice/codecs => ../codecs
