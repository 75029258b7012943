module github.com/sluicerpc/sluice/kernel

go 1.26.0

require (
	github.com/anishathalye/porcupine v1.3.1
	github.com/sluicerpc/sluice/limiters/concurrency v0.0.0
	github.com/sluicerpc/sluice/limiters/tokenbucket v0.0.0
	github.com/sluicerpc/sluice/limiters/window v0.0.0
	github.com/sluicerpc/sluice/spi v0.0.0
	github.com/stretchr/testify v1.12.1
	go.uber.org/goleak v1.3.0
	golang.org/x/time v0.15.0
	pgregory.net/rapid v1.3.0
)

require go.yaml.in/yaml/v3 v3.0.5 // indirect

replace (
	github.com/sluicerpc/sluice/limiters/concurrency => ../limiters/concurrency
	github.com/sluicerpc/sluice/limiters/tokenbucket => ../limiters/tokenbucket
	github.com/sluicerpc/sluice/limiters/window => ../limiters/window
	github.com/sluicerpc/sluice/spi => ../spi
)

replace github.com/sluicerpc/sluice/conformance => ../conformance
