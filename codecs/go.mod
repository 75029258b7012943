module github.com/sluicerpc/sluice/codecs

go 1.26.0

require (
	github.com/andybalholm/brotli v1.3.0
	github.com/klauspost/compress v1.20.4
	github.com/sluicerpc/sluice/conformance v0.0.0
	github.com/sluicerpc/sluice/spi v0.0.0
	github.com/stretchr/testify v1.12.1
	go.uber.org/goleak v1.3.0
)

require (
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	pgregory.net/rapid v1.3.0 // indirect
)

replace github.com/sluicerpc/sluice/spi => ../spi

replace github.com/sluicerpc/sluice/conformance => ../conformance

replace github.com/sluicerpc/sluice/plugin => ../plugin
