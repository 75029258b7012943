module github.com/sluicerpc/sluice/uitest

go 1.26.0

require (
	github.com/chromedp/chromedp v0.23.0
	github.com/sluicerpc/sluice/client v0.0.0
	github.com/sluicerpc/sluice/control v0.0.0
	github.com/sluicerpc/sluice/server v0.0.0
	github.com/stretchr/testify v1.12.1
	go.uber.org/goleak v1.3.0
)

require (
	github.com/andybalholm/brotli v1.3.0 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/chromedp/cdproto v0.159.0 // indirect
	github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect
	github.com/klauspost/compress v1.20.4 // indirect
	github.com/sluicerpc/sluice/codecs v0.0.0 // indirect
	github.com/sluicerpc/sluice/config v0.0.0 // indirect
	github.com/sluicerpc/sluice/endpointpolicy v0.0.0 // indirect
	github.com/sluicerpc/sluice/kernel v0.0.0 // indirect
	github.com/sluicerpc/sluice/limiters/concurrency v0.0.0 // indirect
	github.com/sluicerpc/sluice/limiters/tokenbucket v0.0.0 // indirect
	github.com/sluicerpc/sluice/limiters/window v0.0.0 // indirect
	github.com/sluicerpc/sluice/message v0.0.0 // indirect
	github.com/sluicerpc/sluice/protocol v0.0.0 // indirect
	github.com/sluicerpc/sluice/spi v0.0.0 // indirect
	go.opentelemetry.io/otel v1.47.0 // indirect
	go.opentelemetry.io/otel/metric v1.47.0 // indirect
	go.yaml.in/yaml/v3 v3.0.6 // indirect
)

replace (
	github.com/sluicerpc/sluice/client => ../client
	github.com/sluicerpc/sluice/codecs => ../codecs
	github.com/sluicerpc/sluice/config => ../config
	github.com/sluicerpc/sluice/conformance => ../conformance
	github.com/sluicerpc/sluice/control => ../control
	github.com/sluicerpc/sluice/endpointpolicy => ../endpointpolicy
	github.com/sluicerpc/sluice/kernel => ../kernel
	github.com/sluicerpc/sluice/limiters/concurrency => ../limiters/concurrency
	github.com/sluicerpc/sluice/limiters/tokenbucket => ../limiters/tokenbucket
	github.com/sluicerpc/sluice/limiters/window => ../limiters/window
	github.com/sluicerpc/sluice/message => ../message
	github.com/sluicerpc/sluice/protocol => ../protocol
	github.com/sluicerpc/sluice/server => ../server
	github.com/sluicerpc/sluice/spi => ../spi
)
